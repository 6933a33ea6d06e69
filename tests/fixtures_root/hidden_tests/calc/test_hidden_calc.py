import calc


def test_add_is_unchanged():
    assert calc.add(2, 3) == 5
    assert calc.add(1.5, 1) == 2.5


def test_sub():
    assert calc.sub(5, 3) == 2
    assert calc.sub(2, 5) == -3
    assert calc.sub(1.5, 0.5) == 1.0


def test_mul():
    assert calc.mul(4, 3) == 12
    assert calc.mul(-2, 3) == -6
    assert calc.mul(0, 7) == 0
