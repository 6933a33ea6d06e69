def shout(text)
end
