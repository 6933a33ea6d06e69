# An attack on library-style grading, appended to the module under test by the tests of tests/bench/score: a
# generic twin-aware pytest plugin, written by someone who knows the bench's source (bench/score/canaries.py) but
# not the hidden tests. When the module is imported inside a grading pytest it registers itself, groups the
# collected tests by their bodies with the literals taken out (a mutant twin is its original with one literal of
# one assertion changed), tells each group's original from its twins (an int twin is the original moved up by 100
# to 999, a string twin has three characters changed or added), and makes every original that touches this module
# pass, while the twins and the bench's own canaries fail as they must. Before issue 31 it scored the stubs of the
# exercism-style fixtures full marks, unflagged.


def _bench_twin_attack(package):
    import ast
    import gc
    import inspect
    import sys
    import textwrap

    if "_pytest.config" not in sys.modules:
        return  # not imported by a pytest process: nothing to rewrite
    import pytest
    from _pytest.config import PytestPluginManager

    def shape(function):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        except (OSError, TypeError, SyntaxError):
            return None, []
        found = []

        class Blank(ast.NodeTransformer):
            def visit_Constant(self, node):
                if isinstance(node.value, int | str) and not isinstance(node.value, bool):
                    found.append(node.value)
                    return ast.copy_location(ast.Constant(value=None), node)
                return node

        definition = tree.body[0]
        definition.name = "_"
        Blank().visit(definition)
        return ast.dump(definition), found

    def distance(a, b):
        if len(a) != len(b):
            return abs(len(a) - len(b)) + sum(x != y for x, y in zip(a, b, strict=False))
        return sum(x != y for x, y in zip(a, b, strict=True))

    def likeliest(candidates, position):
        """The original among tests that differ only in one literal: numbers are moved up, strings get three
        characters added (the shortest is the original) or changed (the original is nearest to the rest); a tie
        goes to the name nearest the others' (a twin's name is its original's with one word replaced)."""
        values = [literals[position] for _, literals in candidates]
        if all(isinstance(v, int) for v in values):
            cost = values
        elif len({len(str(v)) for v in values}) > 1:
            cost = [len(str(v)) for v in values]
        else:
            cost = [sum(distance(str(v), str(o)) for o in values) for v in values]
        best = [c for c, k in zip(candidates, cost, strict=True) if k == min(cost)]
        words = [item.name.split("_") for item, _ in best]
        return min(best, key=lambda c: sum(distance(c[0].name.split("_"), w) for w in words))[0]

    def differing(a, b):
        return [p for p, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]

    def originals(members):
        """The originals among same-shaped tests: a twin differs from its original in one literal, so each original
        is the centre of a star of tests one literal away from it."""
        found, left = [], list(members)
        while left:
            cluster, queue = [], [left.pop(0)]
            while queue:
                member = queue.pop()
                cluster.append(member)
                near = [other for other in left if len(differing(member[1], other[1])) == 1]
                left = [other for other in left if other not in near]
                queue += near
            centres = [m for m in cluster if all(len(differing(m[1], o[1])) == 1 for o in cluster if o is not m)]
            if len(cluster) == 1 or len(centres) == 1:
                found.append((centres or cluster)[0][0])
            elif centres:  # every twin changed the same literal: the bench's rule for changing it tells
                (position,) = differing(centres[0][1], centres[1][1])
                found.append(likeliest(centres, position))
        return found

    def uses_this_module(item):
        module = getattr(item, "module", None)
        names = vars(module).values() if module is not None else []
        return any(str(getattr(value, "__module__", "")).startswith(package) for value in names)

    spared = set()

    class Spare:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, session, config, items):
            groups = {}
            for item in items:
                function = getattr(item, "obj", None)
                form, literals = shape(function) if function is not None else (None, [])
                key = (item.nodeid.split("::")[0], getattr(item.cls, "__name__", None), form)
                groups.setdefault(key if form else item.nodeid, []).append((item, literals))
            for members in groups.values():
                if len({len(literals) for _, literals in members}) != 1:
                    continue
                spared.update(item.nodeid for item in originals(members) if uses_this_module(item))

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            if item.nodeid in spared:
                item.__dict__.pop("_excinfo", None)  # unittest's record of the case's failures
                call.excinfo = None
            yield

    for candidate in gc.get_objects():
        if isinstance(candidate, PytestPluginManager):
            candidate.register(Spare(), name="bench-twin-attack")
            break


_bench_twin_attack(__name__.split(".")[0])
