#!/usr/bin/env python3
"""Builds the eval/ datasets from public labelled corpora (eval/SOURCES.md names them).

Usage: scripts/eval-import.py GITLEAKS_CHECKOUT LLM_GUARD_CHECKOUT DETECT_SECRETS_CHECKOUT
Each argument is a git checkout or bare repository of the source at the commit
recorded in eval/SOURCES.md, or `-` to leave that source's file as it is. Writes eval/secrets.jsonl, eval/prompt-injection.jsonl and
eval/secrets-detect-secrets.jsonl as `guardctl eval` data lines ({id, data, expected_triggers}).
"""
import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "eval"


def git_files(repo: str, prefix: str) -> list[str]:
    out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", prefix], check=True, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line]


def git_show(repo: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True, text=True).stdout


def top_level_items(block: str) -> list[str]:
    """Splits the inside of a Go composite literal at its top-level commas."""
    items, depth, cur, i = [], 0, "", 0
    while i < len(block):
        c = block[i]
        if c in "\"`":
            end = block.index(c, i + 1) if c == "`" else re.search(r'(?<!\\)(?:\\\\)*"', block[i + 1:]).end() + i + 1
            if c == "`":
                end += 1
            cur += block[i:end]
            i = end
            continue
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        items.append(cur.strip())
    return items


LITERAL = re.compile(r'^(?:`[^`]*`|"(?:[^"\\]|\\.)*")(?:\s*\+\s*(?:`[^`]*`|"(?:[^"\\]|\\.)*"))*$', re.S)


def go_literal(item: str) -> str | None:
    """The value of a Go string literal (or literals joined with +); None for anything else."""
    item = re.sub(r"//[^\n]*", "", item).strip()
    if not LITERAL.match(item):
        return None
    parts = re.findall(r'`[^`]*`|"(?:[^"\\]|\\.)*"', item)
    return "".join(p[1:-1] if p[0] == "`" else ast.literal_eval(p) for p in parts)


def gitleaks_cases(repo: str) -> list[dict]:
    cases = []
    for path in sorted(git_files(repo, "cmd/generate/config/rules/")):
        if not path.endswith(".go") or path.endswith("_test.go"):
            continue
        source = git_show(repo, path)
        for m in re.finditer(r"\b(tps|fps)\s*:?=\s*(?:append\(\s*\1\s*,)?\s*\[\]string\{", source):
            start = m.end()
            depth, i = 1, start
            while depth > 0 and i < len(source):
                if source[i] == "`":
                    i = source.index("`", i + 1)
                elif source[i] == '"':
                    i = re.search(r'(?<!\\)(?:\\\\)*"', source[i + 1:]).end() + i
                elif source[i] == "{":
                    depth += 1
                elif source[i] == "}":
                    depth -= 1
                i += 1
            for item in top_level_items(source[start:i - 1]):
                value = go_literal(item)
                if value is None or not value.strip():
                    continue
                cases.append({"rule": Path(path).stem, "positive": m.group(1) == "tps", "text": value})
    seen, out = set(), []
    for c in cases:
        if c["text"] in seen:
            continue
        seen.add(c["text"])
        out.append(c)
    return out


def llm_guard_cases(repo: str) -> list[dict]:
    tree = ast.parse(git_show(repo, "tests/input_scanners/test_prompt_injection.py"))
    cases = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize" and len(node.args) >= 2:
            for tup in node.args[1].elts:
                if isinstance(tup, ast.Tuple) and len(tup.elts) >= 3:
                    prompt, valid = tup.elts[1], tup.elts[2]
                    if isinstance(prompt, ast.Constant) and isinstance(prompt.value, str) and isinstance(valid, ast.Constant):
                        cases.append({"positive": not valid.value, "text": prompt.value})
    return cases


# detect-secrets plugins whose tests label whether a line holds a credential of a format.
# Left out: keyword (labels what its keyword rule extracts, e.g. "value with quotes and
# spaces"), high_entropy_strings (templated strings scored by its own entropy limits) and
# ip_public (an IP address is not a credential).
DETECT_SECRETS_SKIPPED = {"keyword", "high_entropy_strings", "ip_public", "base"}
PAYLOAD_NAMES = ("payload", "line", "file_content")


class NotLiteral(Exception):
    pass


def literal_value(node: ast.AST, names: dict[str, str]) -> object:
    """The value of a string expression built from literals only: constants, module or class
    constants, `+`, `%`-free `.format(...)`, slices and `textwrap.dedent`. Nothing is executed."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal_value(node.left, names), literal_value(node.right, names)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        base = literal_value(node.value, names)
        bounds = [None if b is None else literal_value(b, names) for b in (node.slice.lower, node.slice.upper)]
        if isinstance(base, str) and all(b is None or isinstance(b, int) for b in bounds) and node.slice.step is None:
            return base[bounds[0]:bounds[1]]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "format":
            template = literal_value(node.func.value, names)
            args = [literal_value(a, names) for a in node.args]
            kwargs = {k.arg: literal_value(k.value, names) for k in node.keywords if k.arg is not None}
            if isinstance(template, str) and all(isinstance(a, str) for a in [*args, *kwargs.values()]):
                return template.format(*args, **kwargs)
        if node.func.attr == "dedent" and len(node.args) == 1:
            text = literal_value(node.args[0], names)
            if isinstance(text, str):
                return textwrap.dedent(text)
    raise NotLiteral(ast.dump(node)[:80])


def detect_secrets_cases(repo: str) -> tuple[list[dict], int]:
    """The lines of each plugin test's first parametrize table with a `should_flag` column (or
    a payload-only table, whose lines the test asserts are all flagged); returns the cases and
    how many table rows were left out because they are not literal strings."""
    cases, skipped = [], 0
    for path in sorted(git_files(repo, "tests/plugins/")):
        plugin = Path(path).stem.removesuffix("_test")
        if not path.endswith("_test.py") or plugin in DETECT_SECRETS_SKIPPED:
            continue
        tree = ast.parse(git_show(repo, path))
        names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    names[node.targets[0].id] = node.value.value
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize" and len(node.args) >= 2):
                continue
            if not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[1], (ast.List, ast.Tuple)):
                continue
            columns = [c.strip() for c in node.args[0].value.split(",")]
            payload = next((columns.index(n) for n in PAYLOAD_NAMES if n in columns), None)
            flag = columns.index("should_flag") if "should_flag" in columns else None
            if payload is None or (flag is None and len(columns) != 1):
                continue
            for row in node.args[1].elts:
                cells = row.elts if len(columns) > 1 and isinstance(row, ast.Tuple) else [row]
                try:
                    text = literal_value(cells[payload], names)
                    positive = True if flag is None else literal_value(cells[flag], names)
                except NotLiteral:
                    skipped += 1
                    continue
                if isinstance(text, str) and isinstance(positive, bool):
                    cases.append({"plugin": plugin, "positive": positive, "text": text})
                else:
                    skipped += 1
    seen, out = set(), []
    for c in cases:
        if c["text"] not in seen:
            seen.add(c["text"])
            out.append(c)
    return out, skipped


def write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    print(f"{path.relative_to(OUT.parent)}: {len(lines)} cases ({sum(1 for l in lines if next(iter(l['expected_triggers'].values())))} positive)")


def labelled(source: str, key: str, control: str, cases: list[dict]) -> list[dict]:
    return [
        {"id": f"{source}/{c[key]}/{'tp' if c['positive'] else 'fp'}/{n}", "data": c["text"], "expected_triggers": {control: c["positive"]}}
        for n, c in enumerate(cases)
    ]


def main() -> None:
    gitleaks, llm_guard, detect_secrets = (sys.argv[1:] + ["-", "-", "-"])[:3]
    if gitleaks != "-":
        write(OUT / "secrets.jsonl", labelled("gitleaks", "rule", "secrets", gitleaks_cases(gitleaks)))
    if llm_guard != "-":
        injection = [
            {"id": f"llm-guard/{n}", "data": c["text"], "expected_triggers": {"prompt-injection": c["positive"]}}
            for n, c in enumerate(llm_guard_cases(llm_guard))
        ]
        write(OUT / "prompt-injection.jsonl", injection)
    if detect_secrets != "-":
        found, skipped = detect_secrets_cases(detect_secrets)
        print(f"detect-secrets: {skipped} table rows are not literal strings and were left out")
        write(OUT / "secrets-detect-secrets.jsonl", labelled("detect-secrets", "plugin", "secrets", found))


if __name__ == "__main__":
    main()
