def shout(text)
  text.upcase
end
