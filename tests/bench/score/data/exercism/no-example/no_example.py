def answer():
    pass
