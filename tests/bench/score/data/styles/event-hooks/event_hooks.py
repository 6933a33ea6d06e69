def notify(events, hook):
    return 0


def fire(hooks, event):
    return []
