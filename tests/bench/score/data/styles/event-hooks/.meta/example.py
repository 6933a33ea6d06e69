def notify(events, hook):
    for event in events:
        hook(event)
    return len(events)


def fire(hooks, event):
    return [hook(event) for hook in hooks]
