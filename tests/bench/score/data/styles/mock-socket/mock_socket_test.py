from unittest import mock

from mock_socket import close_quietly, send_all


def test_one_send_takes_everything():
    sock = mock.Mock()
    sock.send.return_value = 5
    assert send_all(sock, b"hello") == 1
    sock.send.assert_called_once_with(b"hello")


def test_partial_sends_are_continued():
    sock = mock.MagicMock()
    sock.send.side_effect = [2, 2, 1]
    assert send_all(sock, b"hello") == 3
    assert [c.args[0] for c in sock.send.call_args_list] == [b"hello", b"llo", b"o"]


def test_close_errors_are_swallowed():
    sock = mock.Mock()
    sock.close.side_effect = OSError("gone")
    close_quietly(sock)
    sock.close.assert_called_once_with()


def test_nothing_to_send():
    sock = mock.Mock()
    assert send_all(sock, b"") == 0
    sock.send.assert_not_called()
