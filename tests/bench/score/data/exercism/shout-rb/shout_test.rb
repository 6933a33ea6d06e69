require 'minitest/autorun'
require_relative 'shout'

class ShoutTest < Minitest::Test
  def test_shouts
    assert_equal 'HI', shout('hi')
  end
end
