"""Dumps co_linetable test data from the running interpreter, for
test/unit/collectors/python (collectors/python/line_table.h must give, for every code
offset, the line this interpreter's own co_lines() gives). Run it with the
interpreter whose format is to be captured:

    python3.X scripts/python-linetables.py > test/unit/collectors/python/linetables/3.X.txt

Output, one code object per line:
    <name> <co_firstlineno> <co_linetable hex> <start>:<end>:<line>,...
(<line> is -1 where co_lines() gives None; offsets in bytes.)"""
import sys

# Shapes that stress the encodings: line jumps past one byte (both signs),
# statements spanning lines, loops, comprehensions, generators, handlers.
SOURCE = "\n".join([
    "def plain(a, b):",
    "    c = a + b",
    "    return c * 2",
    "",
    "def spread(a):",
    "    x = (a +",
] + [""] * 300 + [
    "         1)",
    "    y = [i * x for i in range(3)]",
    "    return (x,",
    "            y)",
    "",
    "def gen(n):",
    "    for i in range(n):",
    "        try:",
    "            yield i // (i - 2)",
    "        except ZeroDivisionError:",
    "            yield -1",
    "",
    "class Layer:",
    "    def forward(self, x):",
    "        def inner(v):",
    "            return v + 1",
    "        return inner(x) if x else inner(",
] + [""] * 140 + [
    "            -x)",
    "",
])


def codes(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from codes(const)


def main():
    top = compile(SOURCE, "sample.py", "exec")
    for code in codes(top):
        ranges = ",".join(f"{s}:{e}:{-1 if l is None else l}" for s, e, l in code.co_lines())
        print(code.co_name, code.co_firstlineno, code.co_linetable.hex(), ranges)
    return 0


if __name__ == "__main__":
    sys.exit(main())
