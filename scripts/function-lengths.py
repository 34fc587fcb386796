#!/usr/bin/env python3
"""Lists the product's functions that are longer than a limit, by Universal Ctags.

    python3 scripts/function-lengths.py [--limit N] [--all] [PATH...]
    python3 scripts/function-lengths.py --self-test

PATH defaults to the product folders (agent/ base/ model/ collectors/
exporters/ tools/ that exist; test/ is not product). Each function, method,
generator, getter or setter in a C, C++, CUDA or JavaScript file whose
extent (first line to last, both counted) is over the limit (default 100) is
printed as

    LINES  PATH:FIRST-LAST  NAME (KIND)

and the exit status is 1 if there is one, 0 if none, 2 if ctags could not
be run. --all prints every function measured, over the limit or not (for
checking the extents by hand).

Which functions there are is ctags's answer (`ctags -R --fields=+neK`).
Where they end is ctags's `end` field when it has one: the C/C++ parser
always gives it. Debian's Universal Ctags 5.9 JavaScript parser gives no end
line at all, so for a JavaScript tag with none this script finds the end
itself: from the tag's name it skips the parameter list and matches the body's
braces, reading past comments, strings, template literals and regular
expressions. That 5.9 parser also tags `const f = (x) => {...}` as a
constant, an arrow in an object literal as a property, and the literal
itself as a class: a constant, variable or property whose value is a function
(`= function`, `= (...) =>`, `: x =>`) is measured as a function; a class is
not.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ['agent', 'base', 'model', 'collectors', 'exporters', 'tools']
LANGUAGES = 'C,C++,CUDA,JavaScript'
# Kinds that are functions with bodies. A C/C++ "prototype" has no body
# (and is off by default); namespaces, classes and enumerators are not
# functions.
FUNCTION_KINDS = {
    'C': {'function'},
    'C++': {'function'},
    'CUDA': {'function'},
    'JavaScript': {'function', 'method', 'generator', 'getter', 'setter'},
}
# JavaScript kinds that are functions only when their value is one.
JS_VALUE_KINDS = {'constant', 'variable', 'property'}


# ---- JavaScript: the code's brackets, outside comments, strings and regexes

REGEX_AFTER_WORDS = {
    'return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete',
    'void', 'throw', 'instanceof', 'yield', 'await',
}
REGEX_AFTER_CHARS = set('(,=:[!&|?{};+-*%<>~^')
WORD = re.compile(r'[A-Za-z_$][\w$]*|\d[\w.]*')


class JsScanner:
    """Splits JavaScript source into the tokens the extents need.

    tokens: (text, line, offset) for each of ( ) [ ] { } ; , => outside
    comments, string and template text and regular-expression literals
    (a template's ${...} is code, its own braces are not tokens).
    """

    def __init__(self, text):
        self.text = text
        self.tokens = []
        self.code = []  # (offset, end) of each stretch of code, for finding names
        self._scan()
        self.match = self._pair()

    def _scan(self):
        text, n = self.text, len(self.text)
        i, line = 0, 1
        prev = ''  # the last significant char, a word, or 'literal'
        nest = []  # open brackets; '${' for a template's expression
        code_start = 0
        while i < n:
            c = text[i]
            if c == '\n':
                line += 1
                i += 1
            elif c in ' \t\r\f\v':
                i += 1
            elif text.startswith('//', i):
                j = text.find('\n', i)
                i = n if j < 0 else j
            elif text.startswith('/*', i):
                j = text.find('*/', i + 2)
                j = n if j < 0 else j + 2
                line += text.count('\n', i, j)
                i = j
            elif c in '\'"':
                self.code.append((code_start, i))
                i, line = self._string(i, line, c)
                code_start, prev = i, 'literal'
            elif c == '`' or (c == '}' and nest and nest[-1] == '${'):
                if c == '}':
                    nest.pop()
                self.code.append((code_start, i))
                i, line, opened = self._template(i + 1, line)
                if opened:
                    nest.append('${')
                code_start, prev = i, 'literal'
            elif c == '/' and (prev in REGEX_AFTER_WORDS or prev in REGEX_AFTER_CHARS or prev == ''):
                self.code.append((code_start, i))
                i, line = self._regex(i, line)
                code_start, prev = i, 'literal'
            elif text.startswith('=>', i):
                self.tokens.append(('=>', line, i))
                prev = '='
                i += 2
            elif c in '([{':
                nest.append(c)
                self.tokens.append((c, line, i))
                prev = c
                i += 1
            elif c in ')]}':
                if nest:
                    nest.pop()
                self.tokens.append((c, line, i))
                prev = c
                i += 1
            elif c in ';,':
                self.tokens.append((c, line, i))
                prev = c
                i += 1
            else:
                m = WORD.match(text, i)
                if m:
                    prev = m.group(0)
                    i = m.end()
                else:
                    prev = c
                    i += 1
        self.code.append((code_start, n))

    def _string(self, i, line, quote):
        text, n = self.text, len(self.text)
        i += 1
        while i < n and text[i] != quote and text[i] != '\n':
            if text[i] == '\\' and i + 1 < n:
                if text[i + 1] == '\n':
                    line += 1
                i += 1
            i += 1
        return i + 1, line

    def _template(self, i, line):
        """Reads template text from i; returns where code resumes and whether at a ${."""
        text, n = self.text, len(self.text)
        while i < n:
            c = text[i]
            if c == '\\':
                i += 2
                continue
            if c == '`':
                return i + 1, line, False
            if text.startswith('${', i):
                return i + 2, line, True
            if c == '\n':
                line += 1
            i += 1
        return n, line, False

    def _regex(self, i, line):
        text, n = self.text, len(self.text)
        i += 1
        in_class = False
        while i < n and text[i] != '\n':
            c = text[i]
            if c == '\\':
                i += 2
                continue
            if c == '[':
                in_class = True
            elif c == ']':
                in_class = False
            elif c == '/' and not in_class:
                i += 1
                break
            i += 1
        while i < n and (text[i].isalnum() or text[i] == '_'):
            i += 1
        return i, line

    def _pair(self):
        match, stack = {}, []
        for k, (t, _, _) in enumerate(self.tokens):
            if t in '([{':
                stack.append(k)
            elif t in ')]}' and stack:
                match[stack.pop()] = k
        return match

    def line_offset(self, line):
        offset = 0
        for _ in range(line - 1):
            offset = self.text.find('\n', offset) + 1
            if offset == 0:
                return len(self.text)
        return offset

    def name_offset(self, line, name):
        """Where NAME stands as a word in code on LINE (None if it does not)."""
        start = self.line_offset(line)
        stop = self.text.find('\n', start)
        stop = len(self.text) if stop < 0 else stop
        for m in re.finditer(r'(?<![\w$])' + re.escape(name) + r'(?![\w$])', self.text[start:stop]):
            at = start + m.start()
            if any(a <= at < b for a, b in self.code):
                return at
        return None

    def first_token(self, offset):
        lo, hi = 0, len(self.tokens)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.tokens[mid][2] < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def end_line(self, offset):
        """The last line of the function whose name stands at OFFSET.

        Skips bracketed groups (the parameter list, default values) up to the
        body's '{' and returns the line of its '}'; for an arrow with an
        expression body, the line where the expression ends.
        """
        tokens, k = self.tokens, self.first_token(offset)
        last_line = None
        while k < len(tokens):
            t, line, _ = tokens[k]
            if t == '{':
                return tokens[self.match[k]][1] if k in self.match else None
            if t in '([':
                if k not in self.match:
                    return None
                k = self.match[k]
                last_line = tokens[k][1]
            elif t == '=>':
                if k + 1 < len(tokens) and tokens[k + 1][0] == '{':
                    continue_at = k + 1
                    return tokens[self.match[continue_at]][1] if continue_at in self.match else None
                return self._expression_end(k + 1)
            elif t in ');,]}':
                return line if t == ';' else last_line
            k += 1
        return None

    # Skips bracketed groups as the walk above does, stopping at the expression's end instead.
    def _expression_end(self, k):
        tokens, last_line = self.tokens, None
        while k < len(tokens):
            t, line, _ = tokens[k]
            if t in '([{':
                if k not in self.match:
                    return None
                k = self.match[k]
                last_line = tokens[k][1]
            elif t == ';':
                return line
            elif t in ',)]}':
                return last_line if last_line is not None else line
            k += 1
        return last_line


# A value that is a function: `= function`, `= async (a) =>`, `: x =>`.
JS_FUNCTION_VALUE = re.compile(
    r'\s*[=:]\s*(async\s+)?(function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)')
# Ctags 5.9 reads `get name() {` in an object literal as a constant "get".
JS_ACCESSOR = re.compile(r'\s*\*?\s*[A-Za-z_$][\w$]*\s*\(')


def js_is_function(scanner, tag, offset):
    kind = tag['kind']
    if kind in FUNCTION_KINDS['JavaScript']:
        return True
    if kind not in JS_VALUE_KINDS:
        return False
    after = scanner.text[offset + len(tag['name']):offset + len(tag['name']) + 400]
    if JS_FUNCTION_VALUE.match(after):
        return True
    return tag['name'] in ('get', 'set', 'async', 'static') and bool(JS_ACCESSOR.match(after))


# ---- ctags

def ctags_tags(paths, cwd):
    ctags = shutil.which('ctags')
    if not ctags:
        raise RuntimeError('ctags not found (Debian: apt-get install universal-ctags)')
    version = subprocess.run([ctags, '--version'], capture_output=True, text=True).stdout
    if 'Universal Ctags' not in version:
        raise RuntimeError('ctags is not Universal Ctags: ' + version.splitlines()[0] if version else 'ctags --version said nothing')
    cmd = [ctags, '-R', '--languages=' + LANGUAGES, '--fields=+neKl', '--output-format=json', '-f', '-'] + paths
    run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError('ctags failed: ' + run.stderr.strip())
    tags = []
    for text in run.stdout.splitlines():
        tag = json.loads(text)
        if tag.get('_type') == 'tag':
            tags.append(tag)
    return tags


def measure(tags, cwd):
    """[(lines, path, first, last, name, kind)] for each function; problems on the side."""
    functions, problems, scanners = [], [], {}
    for tag in tags:
        language, kind = tag.get('language'), tag.get('kind')
        path, first = tag['path'], tag['line']
        if language not in FUNCTION_KINDS:
            continue
        last = tag.get('end')
        if language == 'JavaScript':
            if path not in scanners:
                with open(os.path.join(cwd, path), encoding='utf-8', errors='replace') as f:
                    scanners[path] = JsScanner(f.read())
            scanner = scanners[path]
            offset = scanner.name_offset(first, tag['name'])
            if offset is None:
                if kind in FUNCTION_KINDS[language]:
                    problems.append('%s:%d: %s (%s): the name is not on its line' % (path, first, tag['name'], kind))
                continue
            if not js_is_function(scanner, tag, offset):
                continue
            if last is None:
                last = scanner.end_line(offset)
        elif kind not in FUNCTION_KINDS[language]:
            continue
        if last is None:
            problems.append('%s:%d: %s (%s): no end found' % (path, first, tag['name'], kind))
            continue
        functions.append((last - first + 1, path, first, last, tag['name'], kind))
    functions.sort(key=lambda f: (f[1], f[2], f[4]))
    return functions, problems


def report(paths, limit, everything, cwd, out):
    tags = ctags_tags(paths, cwd)
    functions, problems = measure(tags, cwd)
    over = [f for f in functions if f[0] > limit]
    for f in functions if everything else over:
        out.write('%5d  %s:%d-%d  %s (%s)\n' % f)
    for p in problems:
        sys.stderr.write('function-lengths: %s\n' % p)
    sys.stderr.write('function-lengths: %d of %d functions over %d lines\n' % (len(over), len(functions), limit))
    return over, problems


# ---- self-test: the extents of a sample with the constructs that trip readers

SAMPLE = r'''(function () {
  const a = function () {
    return '}';
  };
  const b = (x) => {
    return "{" + x;
  };
  let c = x => x + 1;
  const d = (x) =>
    x.map((y) => { return y; });
  const obj = {
    m1() {
      return 2;
    },
    m2: function () {
      return 3;
    },
    m3: (y) => {
      return y;
    },
    get g() { return 1; },
    n: 4,
  };
  class K {
    constructor() {
      this.q = 1;
    }
    meth(a = { k: '}' }) {
      return `x${ { a: '}' }.a }}` + `
        }`;
    }
  }
  function* gen() {
    yield /[}/]/;
  }
  obj.later = function () {
    // }
    /* } */
    return 4 / 2 / 1;
  };
  function outer() {
    function inner() {
      return /}/.test('}');
    }
    return inner;
  }
})();
'''
SAMPLE_EXTENTS = {
    'a': (2, 4), 'b': (5, 7), 'c': (8, 8), 'd': (9, 10), 'm1': (12, 14),
    'm2': (15, 17), 'm3': (18, 20), 'get': (21, 21), 'constructor': (25, 27),
    'meth': (28, 31), 'gen': (33, 35), 'later': (36, 40), 'outer': (41, 46),
    'inner': (42, 44),
}


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, 'sample.js'), 'w') as f:
            f.write(SAMPLE)
        functions, problems = measure(ctags_tags(['sample.js'], tmp), tmp)
    got = {f[4]: (f[2], f[3]) for f in functions}
    failures = problems[:]
    for name, extent in sorted(SAMPLE_EXTENTS.items()):
        if got.get(name) != extent:
            failures.append('%s: expected lines %d-%d, got %s' % (name, extent[0], extent[1], got.get(name)))
    for name in sorted(set(got) - set(SAMPLE_EXTENTS)):
        failures.append('%s: measured, but it is not a function (%s)' % (name, got[name]))
    for f in failures:
        sys.stderr.write('function-lengths self-test: %s\n' % f)
    print('function-lengths self-test: %d passed, %d failed' % (len(SAMPLE_EXTENTS) - len(failures), len(failures)))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description='Product functions longer than a limit, by Universal Ctags.')
    parser.add_argument('paths', nargs='*', help='files or folders, relative to the repository (default: the product folders)')
    parser.add_argument('--limit', type=int, default=100, help='most lines a function may have (default 100)')
    parser.add_argument('--all', action='store_true', help='print every function measured, not only those over the limit')
    parser.add_argument('--self-test', action='store_true', help='check the extents on a built-in JavaScript sample')
    args = parser.parse_args()
    try:
        if args.self_test:
            return self_test()
        paths = args.paths or [p for p in PRODUCT if os.path.isdir(os.path.join(ROOT, p))]
        if not paths:
            raise RuntimeError('none of the product folders is here: ' + ' '.join(PRODUCT))
        over, problems = report(paths, args.limit, args.all, ROOT, sys.stdout)
    except (RuntimeError, OSError) as e:
        sys.stderr.write('function-lengths: %s\n' % e)
        return 2
    return 1 if over or problems else 0


if __name__ == '__main__':
    sys.exit(main())
