#!/usr/bin/env python3
"""The graph of `crate::...` references between the top-level modules of src/
(docs/architecture.md, "Rules of the house"): prints each module's imports and
exits 1 when the graph has a circle. Comments and `#[cfg(test)] mod tests` are
left out; src/bin/ (the CLI over the library) is not a module of it."""
import os
import re
import sys


def graph(src):
    edges = {}
    for dirpath, dirs, files in os.walk(src):
        if dirpath == src:
            dirs[:] = [d for d in dirs if d != "bin"]
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts == ["lib"]:
                continue
            top = parts[0]
            with open(path, encoding="utf-8") as f:
                text = f.read()
            text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", text, flags=re.S)
            text = re.sub(r"//[^\n]*", "", text)
            deps = edges.setdefault(top, set())
            deps.update(m for m in re.findall(r"crate::(\w+)", text) if m != top)
    return {k: {d for d in v if d in edges} for k, v in edges.items()}


def circles(g):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    g = graph(src)
    for module in sorted(g):
        print(f"{module} -> {', '.join(sorted(g[module])) or '-'}")
    found = circles(g)
    for comp in found:
        print("circle: " + " <-> ".join(comp), file=sys.stderr)
    print(f"{len(g)} modules, {len(found)} circles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
