#!/usr/bin/env python3
"""Builds the eval/ datasets from public labelled corpora (eval/SOURCES.md names them).

Usage: scripts/eval-import.py GITLEAKS_CHECKOUT LLM_GUARD_CHECKOUT
Each argument is a git checkout or bare repository of the source at the commit
recorded in eval/SOURCES.md. Writes eval/secrets.jsonl and eval/prompt-injection.jsonl
as `guardctl eval` data lines ({id, data, expected_triggers}).
"""
import ast
import json
import re
import subprocess
import sys
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


def write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    print(f"{path.relative_to(OUT.parent)}: {len(lines)} cases ({sum(1 for l in lines if next(iter(l['expected_triggers'].values())))} positive)")


def main() -> None:
    gitleaks, llm_guard = sys.argv[1], sys.argv[2]
    secrets = [
        {"id": f"gitleaks/{c['rule']}/{'tp' if c['positive'] else 'fp'}/{n}", "data": c["text"], "expected_triggers": {"secrets": c["positive"]}}
        for n, c in enumerate(gitleaks_cases(gitleaks))
    ]
    injection = [
        {"id": f"llm-guard/{n}", "data": c["text"], "expected_triggers": {"prompt-injection": c["positive"]}}
        for n, c in enumerate(llm_guard_cases(llm_guard))
    ]
    write(OUT / "secrets.jsonl", secrets)
    write(OUT / "prompt-injection.jsonl", injection)


if __name__ == "__main__":
    main()
