def send_all(sock, data):
    calls = 0
    while data:
        taken = sock.send(data)
        data = data[taken:]
        calls += 1
    return calls


def close_quietly(sock):
    try:
        sock.close()
    except OSError:
        pass
