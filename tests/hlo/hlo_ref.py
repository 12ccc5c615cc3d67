#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""hlo_ref.py: an independent NumPy reference interpreter for XLA HLO text.

It checks vtpu's HLO frontend and compiler from the outside: it is written
from XLA's operation semantics (openxla.org/xla/operation_semantics, with
XLA's HloEvaluator as the tie-breaker where the document leaves a corner
open), not from vtpu's C code, and shares nothing with it.

Usage
    hlo_ref.py MODULE.hlo OUTDIR [--seed N]
        Parses MODULE, generates deterministic inputs for the ENTRY
        parameters (OUTDIR/input_<i>.npy), evaluates the module and writes
        every result leaf as OUTDIR/output_<i>.npy (a tuple ROOT gives one
        file per leaf, nested tuples flattened in order) and OUTDIR/meta.txt,
        one line per output: "<i> <hlo shape> <rtol> <atol>".
    hlo_ref.py --compare REFDIR GOTDIR
        Compares GOTDIR/output_<i>.npy with REFDIR/output_<i>.npy under the
        tolerances of REFDIR/meta.txt (shapes must agree; NaN matches NaN,
        an infinity only itself); prints "ok" or one line per bad output.

Exit status: 0 on success; 2 when the module uses a construct this
interpreter cannot evaluate (the message names it: an opcode, a
custom-call target, an elided constant, rng...); 1 on any other error
(malformed HLO, a bad directive, a mismatch in --compare).

Text accepted: HLO as XLA, JAX and torch-xla print it. An optional
"HloModule name, attr=..., ..." header (attribute values of any nesting),
optional stack-frame tables (FileNames, FunctionNames, FileLocations,
StackFrames), then computations, "ENTRY" marking the entry (without it the
last computation is the entry). Computations may carry a signature
"(a: f32[2], b: s32[]) -> f32[2]". Instructions are
"[ROOT] name = shape opcode(operands), attr=value, ...", names with or
without '%', operands with or without their shapes, or whole instructions
written inline ("add(x, f32[4] constant({1,2,3,4}))"). Layouts ({1,0},
{1,0:T(8,128)}), metadata, backend_config, sharding, frontend attributes
and every attribute this interpreter does not need are skipped; so are
/*...*/ and // comments.

Element types: pred, s8..s64, u8..u64, f16, bf16, f32, f64. NumPy has no
bfloat16: bf16 values live in float32 arrays and every instruction whose
result type is bf16 rounds its result to bf16 (round to nearest even).
Floating-point arithmetic is done in float64 and rounded to the result
type once per instruction (for one add, multiply, divide or sqrt that is
the correctly rounded result; for transcendentals it is closer than any
device gets). Reductions with a plain add/multiply/max/min reducer are done
in float64 too; other reducers are applied as written, in a pairwise tree
(XLA leaves the order unspecified). Integer arithmetic wraps; integer
division truncates toward zero, x/0 is -1 (unsigned: all ones), INT_MIN/-1
is INT_MIN; remainder has the sign of the dividend, x%0 is x. Float to
integer conversion truncates, saturates at the type's range and maps NaN to
0. Shifts by the bit width or more give 0 (arithmetic right shift: the sign).

Inputs (numpy.random.default_rng(seed), seed from --seed or, by default,
zlib.crc32 of the module file's basename): floats uniform in [-1, 1)
rounded to the parameter's type, integers uniform in [0, 8), pred random.
A tuple-shaped parameter gets one input file per leaf. Directives in //
comment lines anywhere in the file:
    // vtpu: input 2 int 0 100          integers in [0, 100)
    // vtpu: input 0 uniform -3 3       floats in [-3, 3)
    // vtpu: input 1 values 1 2 3 4     exact values, row-major
    // vtpu: tolerance rtol 1e-2 atol 1e-3          every output
    // vtpu: tolerance 1 rtol 1e-2 atol 1e-3        output 1 only
    // vtpu: constructs a, b, c         (for the suite's table; ignored)
Default tolerances: f32 and f64 rtol 2e-4 atol 1e-5 (the device computes
f64 as f32), bf16 2e-2/1e-2, f16 2e-3/1e-3, integers and pred exact.
Files: bf16 as float32, f16 float16, f64 float64, s64 int64, pred bool...
"""

import argparse
import math
import os
import re
import sys
import warnings
import zlib

import numpy as np

WHILE_CAP = 1000000


class Unsupported(Exception):
    """A construct this interpreter cannot evaluate: exit status 2."""


class HloError(Exception):
    """Malformed HLO or directives: exit status 1."""


# ---- element types --------------------------------------------------------

# HLO element type -> the NumPy dtype of its values here (bf16: float32).
STORAGE = {
    'pred': np.bool_,
    's8': np.int8, 's16': np.int16, 's32': np.int32, 's64': np.int64,
    'u8': np.uint8, 'u16': np.uint16, 'u32': np.uint32, 'u64': np.uint64,
    'f16': np.float16, 'bf16': np.float32, 'f32': np.float32,
    'f64': np.float64,
}
FLOATS = ('f16', 'bf16', 'f32', 'f64')
SIGNED = ('s8', 's16', 's32', 's64')
UNSIGNED = ('u8', 'u16', 'u32', 'u64')
# Types XLA has that this interpreter does not evaluate.
OTHER_TYPES = ('s1', 's2', 's4', 'u1', 'u2', 'u4', 'c64', 'c128', 'f4e2m1fn',
               'f8e3m4', 'f8e4m3', 'f8e4m3fn', 'f8e4m3b11fnuz', 'f8e4m3fnuz',
               'f8e5m2', 'f8e5m2fnuz', 'f8e8m0fnu', 'opaque')
BITS = {'pred': 8, 's8': 8, 's16': 16, 's32': 32, 's64': 64, 'u8': 8,
        'u16': 16, 'u32': 32, 'u64': 64, 'f16': 16, 'bf16': 16, 'f32': 32,
        'f64': 64}
UINT_OF_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT_OF_BITS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}

TOLERANCE = {'f32': (2e-4, 1e-5), 'f64': (2e-4, 1e-5), 'bf16': (2e-2, 1e-2),
             'f16': (2e-3, 1e-3)}


def is_float(t):
    return t in FLOATS


def is_int(t):
    return t in SIGNED or t in UNSIGNED


def f64_to_f32_odd(x):
    """float64 -> float32 rounding to odd: a later rounding to a narrower
    format (bf16) then rounds as if straight from float64."""
    x = np.asarray(x, dtype=np.float64)
    f = x.astype(np.float32)
    back = f.astype(np.float64)
    inexact = (back != x) & np.isfinite(x) & np.isfinite(f)
    if np.any(inexact):
        # Truncate toward zero, then set the sticky last bit.
        toward0 = np.where(np.abs(back) > np.abs(x),
                           np.nextafter(f, np.float32(0)), f)
        bits = toward0.reshape(-1).view(np.uint32).copy()
        bits |= np.uint32(1)
        odd = bits.view(np.float32).reshape(f.shape)
        f = np.where(inexact, odd, f).astype(np.float32)
    return f


def round_bf16(x):
    """Any real array -> float32 array of bf16 values (nearest even)."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        f = f64_to_f32_odd(x)
    else:
        f = x.astype(np.float32)
    shape = f.shape
    u = np.ascontiguousarray(f).reshape(-1).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    nan = np.isnan(f.reshape(-1))
    r = np.where(nan, (u | 0x00400000) & 0xFFFF0000, r) & 0xFFFFFFFF
    return r.astype(np.uint32).view(np.float32).reshape(shape)


def to_type(x, t):
    """A computed array -> the storage of HLO type t: rounds floats to t,
    wraps integers (C conversion), pred from nonzero."""
    x = np.asarray(x)
    if t == 'bf16':
        if x.dtype == np.bool_:
            x = x.astype(np.float32)
        return round_bf16(x)
    if t == 'pred':
        return x != 0 if x.dtype != np.bool_ else x
    dt = STORAGE[t]
    if x.dtype == dt:
        return x
    return x.astype(dt)


def as_f64(x):
    return np.asarray(x).astype(np.float64)


def total_order_key(x, t):
    """Floats -> unsigned keys in IEEE total order
    (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN)."""
    x = np.asarray(x)
    if t == 'f64':
        ut, top = np.uint64, np.uint64(1 << 63)
        u = np.ascontiguousarray(x).reshape(-1).view(ut)
    elif t == 'f16':
        ut, top = np.uint16, np.uint16(1 << 15)
        u = np.ascontiguousarray(x).reshape(-1).view(ut)
    else:   # f32 and bf16 (stored as f32: the order is the same)
        ut, top = np.uint32, np.uint32(1 << 31)
        u = np.ascontiguousarray(x.astype(np.float32)).reshape(-1).view(ut)
    neg = (u & top) != 0
    key = np.where(neg, ~u, u | top).astype(ut)
    return key.reshape(x.shape)


# ---- lexer ----------------------------------------------------------------

class Tok:
    __slots__ = ('kind', 'val', 'line')

    def __init__(self, kind, val, line):
        self.kind, self.val, self.line = kind, val, line

    def __repr__(self):
        return '%s:%r' % (self.kind, self.val)


RE_FLOAT = re.compile(r'-?(?:(?:\d+|\d+\.\d*|\d*\.\d+)[eE][+-]?\d+|'
                      r'\d+\.\d*|\d*\.\d+)')
RE_DIMLABELS = re.compile(r'[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}')
RE_DXD = re.compile(r'\d+(?:x\d+)+')
RE_PAD = re.compile(r'-?\d+_-?\d+(?:_\d+)?(?:x-?\d+_-?\d+(?:_\d+)?)*')
RE_INT = re.compile(r'-?\d+')
RE_IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_.\-]*')
RE_NANPAYLOAD = re.compile(r'\(0x[0-9a-fA-F]+\)')


def lex(text):
    """HLO text -> tokens, following XLA's lexer (hlo_lexer.cc): kinds
    name (%x, or x: before a colon, 'label'), ident, attr (x= : an
    attribute name), int, float, str, dxd, pad, dimlabels, punct, eof."""
    toks = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
            continue
        if c in ' \t\r':
            i += 1
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            if j < 0:
                raise HloError('line %d: unterminated /* comment' % line)
            line += text.count('\n', i, j)
            i = j + 2
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
            continue
        if c == '%':
            m = RE_IDENT.match(text, i + 1)
            if not m:
                raise HloError('line %d: bad name after %%' % line)
            toks.append(Tok('name', m.group(), line))
            i = m.end()
            continue
        if c.isalpha() or c == '_':
            m = RE_DIMLABELS.match(text, i)
            if m and not (m.end() < n and (text[m.end()].isalnum() or
                                           text[m.end()] in '_.')):
                toks.append(Tok('dimlabels', m.group(), line))
                i = m.end()
                continue
            m = RE_IDENT.match(text, i)
            word, j = m.group(), m.end()
            # An identifier swallows '-' ; give back a trailing "-" of "->".
            if word.endswith('-') and text.startswith('>', j):
                word, j = word[:-1], j - 1
            if j < n and text[j] == ':':
                toks.append(Tok('label', word, line))
                i = j + 1
                continue
            if j < n and text[j] == '=' and not text.startswith('==', j):
                toks.append(Tok('attr', word, line))
                i = j + 1
                continue
            if word == 'nan':
                mp = RE_NANPAYLOAD.match(text, j)
                if mp:
                    j = mp.end()
                toks.append(Tok('float', float('nan'), line))
            elif word == 'inf':
                toks.append(Tok('float', float('inf'), line))
            else:
                toks.append(Tok('ident', word, line))
            i = j
            continue
        if c.isdigit() or c == '-' or c == '?':
            if text.startswith('->', i):
                toks.append(Tok('punct', '->', line))
                i += 2
                continue
            for kind, rx in (('float', RE_FLOAT), ('dimlabels', RE_DIMLABELS),
                             ('dxd', RE_DXD), ('pad', RE_PAD),
                             ('int', RE_INT)):
                m = rx.match(text, i)
                if m:
                    s = m.group()
                    if kind == 'float':
                        toks.append(Tok(kind, float(s), line))
                    elif kind == 'int' and s.startswith('-') and int(s) == 0:
                        toks.append(Tok('float', -0.0, line))   # a float -0
                    elif kind == 'int':
                        toks.append(Tok(kind, int(s), line))
                    else:
                        toks.append(Tok(kind, s, line))
                    i = m.end()
                    break
            else:
                if text.startswith('-inf', i):
                    toks.append(Tok('float', float('-inf'), line))
                    i += 4
                elif text.startswith('-nan', i):
                    i += 4
                    mp = RE_NANPAYLOAD.match(text, i)
                    if mp:
                        i = mp.end()
                    toks.append(Tok('float', -float('nan'), line))
                else:
                    toks.append(Tok('punct', c, line))
                    i += 1
            continue
        if c == '"' or c == "'":
            j, out = i + 1, []
            while j < n and text[j] != c:
                if text[j] == '\\' and j + 1 < n:
                    out.append(text[j:j + 2])
                    j += 2
                    continue
                if text[j] == '\n':
                    line += 1
                out.append(text[j])
                j += 1
            if j >= n:
                raise HloError('line %d: unterminated string' % line)
            toks.append(Tok('str', ''.join(out), line))
            i = j + 1
            continue
        if text.startswith('<=', i):
            toks.append(Tok('punct', '<=', line))
            i += 2
            continue
        if text.startswith('...', i):
            toks.append(Tok('punct', '...', line))
            i += 3
            continue
        toks.append(Tok('punct', c, line))
        i += 1
    toks.append(Tok('eof', None, line))
    return toks


def tok_text(t):
    """A token as text again (for attribute values)."""
    if t.kind == 'attr':
        return t.val + '='
    if t.kind == 'name':
        return '%' + t.val
    if t.kind == 'label':
        return t.val + ':'
    if t.kind == 'str':
        return '"%s"' % t.val
    if t.kind == 'float':
        return repr(t.val)
    return str(t.val)


# ---- module structure -----------------------------------------------------

class Shape:
    """An array shape (etype, dims), a tuple (tuple_shapes) or a token."""

    def __init__(self, etype=None, dims=(), tuple_shapes=None):
        self.etype, self.dims, self.tuple = etype, tuple(dims), tuple_shapes

    def is_tuple(self):
        return self.tuple is not None

    def leaves(self):
        if self.tuple is None:
            return [self]
        out = []
        for s in self.tuple:
            out.extend(s.leaves())
        return out

    def __str__(self):
        if self.tuple is not None:
            return '(' + ', '.join(str(s) for s in self.tuple) + ')'
        return '%s[%s]' % (self.etype, ','.join(str(d) for d in self.dims))


class Inst:
    def __init__(self, name, shape, opcode, line):
        self.name, self.shape, self.opcode = name, shape, opcode
        self.line = line
        self.operands = []      # names (resolved to Inst after parsing)
        self.attrs = {}         # attribute name -> list of tokens
        self.literal = None     # constant: flat values, or tuple of them
        self.param = None       # parameter: its number

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def where(self):
        return "'%s' (line %d, %s)" % (self.name, self.line, self.opcode)


class Computation:
    def __init__(self, name):
        self.name = name
        self.insts = []
        self.by_name = {}
        self.root = None
        self.params = {}
        self.order = None       # evaluation order, computed once


class Module:
    def __init__(self):
        self.name = None
        self.comps = {}
        self.entry = None


PRIMITIVE = set(STORAGE) | set(OTHER_TYPES) | {'token'}
STACK_TABLES = ('FileNames', 'FunctionNames', 'FileLocations', 'StackFrames')


class Parser:
    """A recursive-descent parser over lex()'s tokens."""

    def __init__(self, text):
        self.t = lex(text)
        self.i = 0
        self.anon = 0

    # -- token helpers
    def peek(self, k=0):
        return self.t[min(self.i + k, len(self.t) - 1)]

    def next(self):
        tok = self.t[self.i]
        if tok.kind != 'eof':
            self.i += 1
        return tok

    def is_p(self, val, k=0):
        tok = self.peek(k)
        return tok.kind == 'punct' and tok.val == val

    def eat_p(self, val):
        if self.is_p(val):
            self.i += 1
            return True
        return False

    def expect_p(self, val, what):
        if not self.eat_p(val):
            tok = self.peek()
            raise HloError("line %d: expected '%s' %s, got %s"
                           % (tok.line, val, what, tok_text(tok)))

    def error(self, msg):
        raise HloError('line %d: %s' % (self.peek().line, msg))

    def skip_group(self):
        """Skips one balanced (...) / {...} / [...] group, returns it."""
        pairs = {'(': ')', '{': '}', '[': ']'}
        start = self.i
        stack = []
        while True:
            tok = self.next()
            if tok.kind == 'eof':
                raise HloError('line %d: unbalanced brackets'
                               % self.t[start].line)
            if tok.kind == 'punct':
                if tok.val in pairs:
                    stack.append(pairs[tok.val])
                elif tok.val in ')}]':
                    if not stack or stack.pop() != tok.val:
                        raise HloError("line %d: unbalanced '%s'"
                                       % (tok.line, tok.val))
            if not stack:
                return self.t[start:self.i]

    # -- module
    def parse_module(self):
        mod = Module()
        tok = self.peek()
        if tok.kind == 'ident' and tok.val == 'HloModule':
            self.next()
            name = self.next()
            mod.name = name.val
            # Header attributes: each value one token or one group.
            while self.is_p(','):
                self.next()
                if self.peek().kind != 'attr':
                    self.error('expected a module attribute')
                self.next()
                if self.peek().kind == 'punct' and self.peek().val in '({[':
                    self.skip_group()
                else:
                    self.next()
        last = None
        while self.peek().kind != 'eof':
            tok = self.peek()
            if tok.kind == 'ident' and tok.val in STACK_TABLES:
                self.skip_stack_table()
                continue
            comp, is_entry = self.parse_computation()
            if comp.name in mod.comps:
                raise HloError("computation '%s' defined twice" % comp.name)
            mod.comps[comp.name] = comp
            last = comp
            if is_entry:
                if mod.entry is not None:
                    raise HloError('more than one ENTRY computation')
                mod.entry = comp
        if last is None:
            raise HloError('no computation in the module')
        if mod.entry is None:
            mod.entry = last
        self.resolve(mod)
        return mod

    def skip_stack_table(self):
        """FileNames / FunctionNames / FileLocations / StackFrames: rows of
        an id and a string or a {...} record."""
        self.next()
        while self.peek().kind == 'int':
            self.next()
            if self.peek().kind == 'str':
                self.next()
            elif self.is_p('{'):
                self.skip_group()
            else:
                self.error('bad stack-frame table row')

    def parse_computation(self):
        is_entry = False
        tok = self.peek()
        if tok.kind == 'ident' and tok.val == 'ENTRY':
            self.next()
            is_entry = True
        tok = self.next()
        if tok.kind not in ('name', 'ident'):
            raise HloError('line %d: expected a computation name, got %s'
                           % (tok.line, tok_text(tok)))
        comp = Computation(tok.val)
        if self.is_p('('):
            self.skip_group()           # the signature's parameters
        if self.eat_p('->'):
            self.parse_shape()
        self.expect_p('{', "to open computation '%s'" % comp.name)
        while not self.eat_p('}'):
            if self.peek().kind == 'eof':
                self.error("computation '%s' has no closing '}'" % comp.name)
            self.parse_instruction(comp)
        # ", execution_thread=..." and the like after the body.
        while self.is_p(',') and self.peek(1).kind == 'attr':
            self.next()
            self.next()
            if self.peek().kind == 'punct' and self.peek().val in '({[':
                self.skip_group()
            else:
                self.next()
        if comp.root is None:
            if not comp.insts:
                raise HloError("computation '%s' is empty" % comp.name)
            comp.root = comp.insts[-1]
        return comp, is_entry

    def can_be_shape(self):
        tok = self.peek()
        if tok.kind == 'ident' and tok.val in PRIMITIVE and self.is_p('[', 1):
            return True
        return self.is_p('(')

    def parse_shape(self):
        if self.eat_p('('):
            shapes = []
            if not self.eat_p(')'):
                while True:
                    shapes.append(self.parse_shape())
                    if self.eat_p(')'):
                        break
                    self.expect_p(',', 'in a tuple shape')
            return Shape(tuple_shapes=shapes)
        tok = self.next()
        if tok.kind != 'ident' or tok.val not in PRIMITIVE:
            raise HloError('line %d: expected a shape, got %s'
                           % (tok.line, tok_text(tok)))
        self.expect_p('[', 'after the element type')
        dims = []
        while not self.eat_p(']'):
            d = self.next()
            if d.kind == 'int':
                dims.append(d.val)
            elif d.kind == 'punct' and d.val in ('?', '<='):
                raise Unsupported('dynamic dimension in a shape (line %d)'
                                  % d.line)
            elif not (d.kind == 'punct' and d.val == ','):
                raise HloError('line %d: bad dimension %s'
                               % (d.line, tok_text(d)))
        # A layout: {1,0}, {}, {0:T(8,128)}, {:S(1)}; a '{' followed by
        # anything else opens a computation body ("-> f32[] {").
        # Its minor_to_major list is kept: a bitcast's meaning depends on it.
        layout = None
        if self.is_p('{') and (self.peek(1).kind == 'int' or
                               self.is_p('}', 1) or self.is_p(':', 1)):
            mtm, k = [], 1
            while self.peek(k).kind == 'int':
                mtm.append(self.peek(k).val)
                k += 1
                if not self.is_p(',', k):
                    break
                k += 1
            if sorted(mtm) == list(range(len(dims))):
                layout = tuple(mtm)
            self.skip_group()
        if tok.val in OTHER_TYPES:
            raise Unsupported('element type %s (line %d)'
                              % (tok.val, tok.line))
        shape = Shape(tok.val, dims)
        shape.layout = layout
        return shape

    def parse_instruction(self, comp):
        is_root = False
        tok = self.peek()
        if tok.kind == 'ident' and tok.val == 'ROOT':
            self.next()
            is_root = True
        tok = self.next()
        if tok.kind == 'attr':
            name = tok.val              # "x=..." written without spaces
        elif tok.kind in ('name', 'ident') and self.is_p('='):
            name = tok.val
            self.next()
        else:
            raise HloError("line %d: expected 'name =' to start an "
                           "instruction, got %s" % (tok.line, tok_text(tok)))
        inst = self.parse_rhs(comp, name, tok.line)
        if is_root:
            if comp.root is not None:
                raise HloError("computation '%s' has two ROOTs" % comp.name)
            comp.root = inst
        return inst

    def parse_rhs(self, comp, name, line):
        shape = self.parse_shape() if self.can_be_shape() else None
        op = self.next()
        if op.kind != 'ident':
            raise HloError('line %d: expected an opcode, got %s'
                           % (op.line, tok_text(op)))
        inst = Inst(name, shape, op.val, line)
        self.expect_p('(', "after opcode '%s'" % op.val)
        if op.val == 'constant':
            inst.literal = self.parse_literal()
            self.expect_p(')', 'after the constant')
        elif op.val == 'parameter':
            num = self.next()
            if num.kind != 'int':
                raise HloError('line %d: parameter wants a number' % num.line)
            inst.param = num.val
            self.expect_p(')', 'after the parameter number')
        else:
            if not self.eat_p(')'):
                while True:
                    inst.operands.append(self.parse_operand(comp))
                    if self.eat_p(')'):
                        break
                    self.expect_p(',', 'between operands')
        while self.is_p(',') and self.peek(1).kind == 'attr':
            self.next()
            key = self.next().val
            inst.attrs[key] = self.attr_value()
        if shape is None:
            raise Unsupported("instruction '%s' (line %d) has no shape "
                              "(shape inference)" % (name, line))
        if name in comp.by_name:
            raise HloError("line %d: instruction '%s' defined twice"
                           % (line, name))
        comp.by_name[name] = inst
        comp.insts.append(inst)
        if inst.param is not None:
            if inst.param in comp.params:
                raise HloError("computation '%s': parameter %d twice"
                               % (comp.name, inst.param))
            comp.params[inst.param] = inst
        return inst

    def parse_operand(self, comp):
        if self.can_be_shape():
            save = self.i
            self.parse_shape()
            # "f32[4] constant(...)": an instruction written inline.
            if self.peek().kind == 'ident' and self.is_p('(', 1):
                self.i = save
                self.anon += 1
                inst = self.parse_rhs(comp, '__inline.%d' % self.anon,
                                      self.peek().line)
                return inst.name
        tok = self.next()
        if tok.kind in ('name', 'ident'):
            if tok.kind == 'ident' and self.is_p('('):
                raise Unsupported("inline instruction '%s' without a shape "
                                  "(line %d)" % (tok.val, tok.line))
            return tok.val
        raise HloError('line %d: expected an operand, got %s'
                       % (tok.line, tok_text(tok)))

    def attr_value(self):
        """The tokens of one attribute value: up to a ',' at depth 0, the
        end of the computation, or the start of the next instruction."""
        out = []
        depth = 0
        while True:
            tok = self.peek()
            if tok.kind == 'eof':
                break
            if depth == 0:
                if tok.kind == 'punct' and tok.val in (',', '}', ')'):
                    break
                if out and tok.kind == 'attr':
                    break
                if out and tok.kind == 'ident' and tok.val == 'ROOT':
                    break
                if (out and tok.kind in ('name', 'ident') and
                        self.is_p('=', 1)):
                    break
            if tok.kind == 'punct':
                if tok.val in '({[':
                    depth += 1
                elif tok.val in ')}]':
                    depth -= 1
            out.append(self.next())
        return out

    def parse_literal(self):
        """A constant's value: a scalar, nested braces, or a tuple of
        those in parentheses. Returns a flat list, or a tuple of them."""
        if self.is_p('('):
            self.next()
            parts = []
            if not self.eat_p(')'):
                while True:
                    parts.append(self.parse_literal())
                    if self.eat_p(')'):
                        break
                    self.expect_p(',', 'in a tuple constant')
            return tuple(parts)
        vals = []
        depth = 0
        while True:
            tok = self.peek()
            if tok.kind == 'punct' and tok.val == '{':
                depth += 1
            elif tok.kind == 'punct' and tok.val == '}':
                depth -= 1
            elif tok.kind == 'punct' and tok.val == '...':
                raise Unsupported('elided constant {...} (line %d)' % tok.line)
            elif tok.kind == 'punct' and tok.val == ',':
                if depth == 0:
                    break
            elif tok.kind in ('int', 'float'):
                vals.append(tok.val)
            elif tok.kind == 'ident' and tok.val in ('true', 'false'):
                vals.append(tok.val == 'true')
            elif tok.kind == 'punct' and tok.val == ')' and depth == 0:
                break
            else:
                raise HloError('line %d: bad constant element %s'
                               % (tok.line, tok_text(tok)))
            self.next()
            if depth == 0:
                break
        return vals

    def resolve(self, mod):
        """Operand names -> instructions; computation evaluation orders."""
        for comp in mod.comps.values():
            for inst in comp.insts:
                ops = []
                for o in inst.operands:
                    if o not in comp.by_name:
                        raise HloError("line %d: '%s' uses '%s', which is not "
                                       "in computation '%s'"
                                       % (inst.line, inst.name, o, comp.name))
                    ops.append(comp.by_name[o])
                inst.operands = ops
            n = len(comp.params)
            if sorted(comp.params) != list(range(n)):
                raise HloError("computation '%s': parameters are not 0..%d"
                               % (comp.name, n - 1))
            comp.order = topo_order(comp)


def topo_order(comp):
    """The instructions the root depends on, operands first (iterative:
    long chains must not hit Python's recursion limit)."""
    order, state = [], {}
    stack = [(comp.root, False)]
    while stack:
        inst, done = stack.pop()
        if done:
            state[inst.name] = 2
            order.append(inst)
            continue
        st = state.get(inst.name)
        if st == 2:
            continue
        if st == 1:
            raise HloError("computation '%s': a cycle through '%s'"
                           % (comp.name, inst.name))
        state[inst.name] = 1
        stack.append((inst, True))
        for o in reversed(inst.operands):
            if state.get(o.name) != 2:
                stack.append((o, False))
    return order


# ---- attributes -----------------------------------------------------------

def attr_tokens(inst, key, required=True):
    toks = inst.attrs.get(key)
    if toks is None:
        if required:
            raise HloError('%s: no %s=' % (inst.where(), key))
        return None
    return toks


def attr_ints(inst, key, default=None):
    """{1,0} / {} / 3 -> a list of ints."""
    toks = inst.attrs.get(key)
    if toks is None:
        if default is not None:
            return list(default)
        raise HloError('%s: no %s=' % (inst.where(), key))
    out = []
    for t in toks:
        if t.kind == 'int':
            out.append(t.val)
        elif t.kind == 'float' and t.val == 0:
            out.append(0)               # "-0"
        elif not (t.kind == 'punct' and t.val in '{},'):
            raise HloError('%s: %s= wants integers' % (inst.where(), key))
    return out


def attr_int(inst, key, default=None):
    toks = inst.attrs.get(key)
    if toks is None:
        if default is not None:
            return default
        raise HloError('%s: no %s=' % (inst.where(), key))
    if len(toks) != 1 or toks[0].kind != 'int':
        raise HloError('%s: %s= wants an integer' % (inst.where(), key))
    return toks[0].val


def attr_word(inst, key, default=None):
    """An identifier, string or number attribute as text."""
    toks = inst.attrs.get(key)
    if toks is None:
        return default
    if len(toks) == 1:
        return str(toks[0].val)
    return ''.join(tok_text(t) for t in toks)


def attr_float(inst, key, default):
    toks = inst.attrs.get(key)
    if toks is None:
        return default
    if len(toks) != 1 or toks[0].kind not in ('int', 'float'):
        raise HloError('%s: %s= wants a number' % (inst.where(), key))
    return float(toks[0].val)


def attr_bool(inst, key, default=False):
    w = attr_word(inst, key)
    return default if w is None else w == 'true'


def attr_comp_names(inst, key):
    """to_apply=%f -> ['f']; branch_computations={%a, %b} -> ['a', 'b']."""
    toks = attr_tokens(inst, key)
    return [t.val for t in toks if t.kind in ('name', 'ident')]


def attr_int_lists(inst, key):
    """{{0,1},{2,3}} -> [[0, 1], [2, 3]]."""
    toks = attr_tokens(inst, key)
    out, cur, depth = [], None, 0
    for t in toks:
        if t.kind == 'punct' and t.val == '{':
            depth += 1
            if depth == 2:
                cur = []
        elif t.kind == 'punct' and t.val == '}':
            if depth == 2:
                out.append(cur)
            depth -= 1
        elif t.kind == 'int' and depth == 2:
            cur.append(t.val)
    return out


def split_dxd(s):
    return [int(v) for v in str(s).split('x')]


def attr_window(inst, rank):
    """window={size=2x2 stride=1x1 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=..
    rhs_reversal=..} -> a dict of per-dimension lists."""
    w = {'size': [1] * rank, 'stride': [1] * rank, 'pad': [(0, 0)] * rank,
         'lhs_dilate': [1] * rank, 'rhs_dilate': [1] * rank,
         'rhs_reversal': [0] * rank}
    toks = inst.attrs.get('window')
    if toks is None:
        return w
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == 'attr':
            if i + 1 >= len(toks):
                raise HloError('%s: bad window' % inst.where())
            val = toks[i + 1]
            key = t.val
            if key == 'pad':
                dims = str(val.val).split('x')
                w['pad'] = [tuple(int(p) for p in d.split('_')) for d in dims]
            elif key in w:
                w[key] = split_dxd(val.val)
            else:
                raise Unsupported('%s: window attribute %s' % (inst.where(),
                                                                key))
            i += 2
            continue
        i += 1
    for key, v in w.items():
        if len(v) != rank:
            raise HloError('%s: window %s has %d dimensions, not %d'
                           % (inst.where(), key, len(v), rank))
    return w


def attr_padding(inst, rank):
    """padding=1_2x0_0_1 -> [(lo, hi, interior), ...]."""
    toks = attr_tokens(inst, 'padding')
    text = ''.join(str(t.val) for t in toks)
    if rank == 0:
        return []
    out = []
    for d in text.split('x'):
        parts = [int(p) for p in d.split('_')]
        if len(parts) == 2:
            parts.append(0)
        out.append(tuple(parts))
    if len(out) != rank:
        raise HloError('%s: padding has %d dimensions, not %d'
                       % (inst.where(), len(out), rank))
    return out


def attr_slice(inst):
    """slice={[0:2], [1:5:2]} -> [(start, limit, stride), ...]."""
    toks = attr_tokens(inst, 'slice')
    out, cur = [], None
    for t in toks:
        if t.kind == 'punct' and t.val == '[':
            cur = []
        elif t.kind == 'punct' and t.val == ']':
            if len(cur) == 2:
                cur.append(1)
            out.append(tuple(cur))
            cur = None
        elif t.kind == 'int' and cur is not None:
            cur.append(t.val)
    return out


# ---- evaluation -----------------------------------------------------------

TOKEN = ('token',)      # the value of token-typed instructions

# Opcodes that act elementwise on scalars: a computation made of only
# these can run on whole arrays at once ("lifted") instead of element by
# element (reducers, comparators, combiners, map).
LIFTABLE = {
    'parameter', 'constant', 'abs', 'negate', 'exponential',
    'exponential-minus-one', 'log', 'log-plus-one', 'sqrt', 'rsqrt', 'cbrt',
    'tanh', 'logistic', 'sine', 'cosine', 'tan', 'floor', 'ceil',
    'round-nearest-afz', 'round-nearest-even', 'sign', 'not', 'is-finite',
    'erf', 'popcnt', 'count-leading-zeros', 'real', 'imag', 'add',
    'subtract', 'multiply', 'divide', 'remainder', 'maximum', 'minimum',
    'power', 'atan2', 'and', 'or', 'xor', 'shift-left',
    'shift-right-arithmetic', 'shift-right-logical', 'compare', 'select',
    'clamp', 'convert', 'bitcast-convert', 'copy', 'tuple',
    'get-tuple-element', 'call', 'fusion', 'reduce-precision',
    'optimization-barrier', 'opt-barrier', 'reshape', 'broadcast',
    'bitcast',
}

# Reducers / combiners NumPy can apply directly: opcode -> ufunc by kind.
UFUNCS = {
    'add': (np.add, np.add, np.logical_or),
    'multiply': (np.multiply, np.multiply, np.logical_and),
    'maximum': (np.maximum, np.maximum, np.logical_or),
    'minimum': (np.minimum, np.minimum, np.logical_and),
    'and': (None, np.bitwise_and, np.logical_and),
    'or': (None, np.bitwise_or, np.logical_or),
    'xor': (None, np.bitwise_xor, np.logical_xor),
}


def ufunc_for(op, t):
    """(ufunc, compute-in-float64) for a simple reducer on type t."""
    fl, it, pr = UFUNCS[op]
    if t == 'pred':
        return pr, False
    if is_float(t):
        return fl, True
    return it, False


def leaves_of(v):
    if isinstance(v, tuple) and v is not TOKEN:
        out = []
        for x in v:
            out.extend(leaves_of(x))
        return out
    return [v]


class Evaluator:
    def __init__(self, mod):
        self.mod = mod
        self.liftable = {}

    # -- computations
    def comp(self, inst, key):
        names = attr_comp_names(inst, key)
        if len(names) != 1:
            raise HloError('%s: %s= wants one computation' % (inst.where(),
                                                              key))
        return self.comp_named(inst, names[0])

    def comp_named(self, inst, name):
        c = self.mod.comps.get(name)
        if c is None:
            raise HloError("%s: no computation '%s'" % (inst.where(), name))
        return c

    def call(self, comp, args, lifted=False):
        """Evaluates a computation on argument values."""
        if len(args) != len(comp.params):
            raise HloError("computation '%s' takes %d arguments, given %d"
                           % (comp.name, len(comp.params), len(args)))
        env = {}
        for inst in comp.order:
            if inst.opcode == 'parameter':
                v = args[inst.param]
            else:
                v = self.eval_inst(inst, [env[o.name] for o in inst.operands],
                                   lifted)
            env[inst.name] = v
        return env[comp.root.name]

    def is_liftable(self, comp):
        if comp.name not in self.liftable:
            self.liftable[comp.name] = False    # (recursion guard)
            ok = True
            for inst in comp.order:
                if inst.opcode not in LIFTABLE:
                    ok = False
                elif inst.opcode in ('constant', 'reshape', 'broadcast',
                                     'bitcast'):
                    # Only scalars: a lifted scalar is a whole array.
                    ok = not inst.shape.is_tuple() and inst.shape.dims == ()
                    if inst.opcode != 'constant':
                        ok = ok and all(o.shape.dims == ()
                                        for o in inst.operands)
                elif inst.opcode == 'bitcast-convert':
                    ok = BITS.get(inst.shape.etype) == \
                        BITS.get(inst.operands[0].shape.etype)
                elif inst.opcode in ('call', 'fusion'):
                    key = 'to_apply' if inst.opcode == 'call' else 'calls'
                    ok = self.is_liftable(self.comp(inst, key))
                if not ok:
                    break
            self.liftable[comp.name] = ok
        return self.liftable[comp.name]

    def apply(self, comp, args):
        """Applies a scalar computation elementwise over same-shaped (or
        broadcastable) arrays: lifted when it is made of elementwise
        opcodes, else one element at a time."""
        args = [np.asarray(a) for a in args]
        if self.is_liftable(comp):
            shape = np.broadcast_shapes(*[a.shape for a in args])
            res = self.call(comp, args, lifted=True)
            return self._broadcast_result(res, shape)
        shape = np.broadcast_shapes(*[a.shape for a in args])
        args = [np.broadcast_to(a, shape) for a in args]
        outs = None
        for idx in np.ndindex(*shape):
            r = self.call(comp, [np.asarray(a[idx]) for a in args])
            rl = leaves_of(r)
            if outs is None:
                outs = [np.empty(shape, dtype=np.asarray(x).dtype) for x in rl]
            for o, x in zip(outs, rl):
                o[idx] = x
        if outs is None:        # no elements: evaluate once for the types
            r = self.call(comp, [np.zeros((), a.dtype) for a in args])
            outs = [np.empty(shape, np.asarray(x).dtype) for x in leaves_of(r)]
        return outs[0] if len(outs) == 1 and not comp.root.shape.is_tuple() \
            else tuple(outs)

    def _broadcast_result(self, res, shape):
        if isinstance(res, tuple):
            return tuple(self._broadcast_result(r, shape) for r in res)
        return np.broadcast_to(np.asarray(res), shape).copy()

    # -- instructions
    def eval_inst(self, inst, ops, lifted):
        fn = getattr(self, 'op_' + inst.opcode.replace('-', '_'), None)
        if fn is None:
            fn = ELEMENTWISE.get(inst.opcode)
            if fn is None:
                raise Unsupported("opcode '%s' (%s)" % (inst.opcode,
                                                        inst.where()))
            v = fn(self, inst, ops)
        else:
            v = fn(inst, ops, lifted)
        return self.finish(inst, inst.shape, v, lifted)

    def finish(self, inst, shape, v, lifted):
        """Rounds / wraps a result to its declared type; checks shapes."""
        if shape.is_tuple():
            if not isinstance(v, tuple) or len(v) != len(shape.tuple):
                raise HloError('%s: result is not a %d-tuple'
                               % (inst.where(), len(shape.tuple)))
            return tuple(self.finish(inst, s, x, lifted)
                         for s, x in zip(shape.tuple, v))
        if shape.etype == 'token':
            return TOKEN
        if isinstance(v, tuple):
            raise HloError('%s: a tuple where %s was declared'
                           % (inst.where(), shape))
        v = to_type(np.asarray(v), shape.etype)
        if not lifted and v.shape != shape.dims:
            raise HloError('%s: computed shape %s, declared %s'
                           % (inst.where(), list(v.shape), shape))
        return v

    def etype(self, inst, k):
        return inst.operands[k].shape.etype


# ---- elementwise operations -----------------------------------------------

def _errstate():
    return np.errstate(all='ignore')


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


def _round_afz(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _unsigned(x, t):
    """Integers reinterpreted as the unsigned type of their width."""
    return np.asarray(x).astype(UINT_OF_BITS[BITS[t]])


def _popcnt(x, t):
    u = _unsigned(x, t).astype(np.uint64)
    n = np.zeros(u.shape, np.int64)
    for i in range(BITS[t]):
        n += ((u >> np.uint64(i)) & np.uint64(1)).astype(np.int64)
    return n


def _clz(x, t):
    u = _unsigned(x, t).astype(np.uint64)
    width = np.zeros(u.shape, np.int64)
    for i in range(BITS[t]):
        width = np.where(((u >> np.uint64(i)) & np.uint64(1)) != 0, i + 1,
                         width)
    return BITS[t] - width


def _sign(x, t):
    if is_float(t):
        x = as_f64(x)
        return np.where(x == 0, x, np.sign(x))     # keeps -0 and NaN
    return np.sign(x)


# Unary: opcode -> f(x, etype) on float64 (floats) or the integer type.
FLOAT_UNARY = {
    'exponential': np.exp, 'exponential-minus-one': np.expm1, 'log': np.log,
    'log-plus-one': np.log1p, 'sqrt': np.sqrt,
    'rsqrt': lambda x: 1.0 / np.sqrt(x), 'cbrt': np.cbrt, 'tanh': np.tanh,
    'logistic': lambda x: 1.0 / (1.0 + np.exp(-x)), 'sine': np.sin,
    'cosine': np.cos, 'tan': np.tan, 'round-nearest-afz': _round_afz,
    'round-nearest-even': np.rint, 'erf': _erf,
}


def ew_unary(ev, inst, ops):
    op = inst.opcode
    (x,) = ops
    t = ev.etype(inst, 0)
    with _errstate():
        if op in FLOAT_UNARY:
            if not is_float(t):
                raise HloError('%s on %s' % (inst.where(), t))
            return FLOAT_UNARY[op](as_f64(x))
        if op == 'abs':
            return np.abs(as_f64(x)) if is_float(t) else np.abs(x)
        if op == 'negate':
            return -as_f64(x) if is_float(t) else np.negative(x)
        if op in ('floor', 'ceil'):
            if not is_float(t):
                return x
            return (np.floor if op == 'floor' else np.ceil)(as_f64(x))
        if op == 'sign':
            return _sign(x, t)
        if op == 'not':
            return np.logical_not(x) if t == 'pred' else np.invert(x)
        if op == 'is-finite':
            return np.isfinite(as_f64(x))
        if op == 'popcnt':
            return _popcnt(x, t)
        if op == 'count-leading-zeros':
            return _clz(x, t)
        if op in ('real', 'copy', 'optimization-barrier', 'opt-barrier'):
            return x
        if op == 'imag':
            return np.zeros_like(x)
    raise Unsupported("opcode '%s'" % op)


def _int_divide(a, b, t):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dt = STORAGE[t]
    zero = b == 0
    safe = np.where(zero, 1, b).astype(dt)
    if t in SIGNED:
        lo = np.iinfo(dt).min
        ovf = (a == lo) & (b == -1)
        safe = np.where(ovf, 1, safe).astype(dt)
        q = np.floor_divide(a, safe)
        # floor -> toward zero: a nonzero remainder with unlike signs
        fix = (np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))
        q = (q + fix.astype(dt)).astype(dt)
        return np.where(zero, np.array(-1, dt), q).astype(dt)
    q = np.floor_divide(a, safe)
    return np.where(zero, np.array(np.iinfo(dt).max, dt), q).astype(dt)


def _int_remainder(a, b, t):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dt = STORAGE[t]
    zero = b == 0
    safe = np.where(zero, 1, b).astype(dt)
    if t in SIGNED:
        ovf = (a == np.iinfo(dt).min) & (b == -1)
        safe = np.where(ovf, 1, safe).astype(dt)     # x % 1 == 0
    r = np.fmod(a, safe)                             # sign of the dividend
    return np.where(zero, a, r).astype(dt)


def _int_power(a, b, t):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dt = STORAGE[t]
    # Square-and-multiply in the type itself: wraps like XLA's IPow.
    neg = (b < 0) if t in SIGNED else np.zeros(b.shape, bool)
    e = np.where(neg, 0, b).astype(np.uint64)
    base = a.astype(dt).copy()
    acc = np.ones(a.shape, dt)
    with _errstate():
        while np.any(e):
            odd = (e & np.uint64(1)) != 0
            acc = np.where(odd, (acc * base).astype(dt), acc).astype(dt)
            base = (base * base).astype(dt)
            e = e >> np.uint64(1)
    return np.where(neg, np.where(a == 1, 1, 0).astype(dt), acc).astype(dt)


def _shift(op, a, b, t):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    bits = BITS[t]
    ut, st = UINT_OF_BITS[bits], SINT_OF_BITS[bits]
    dt = STORAGE[t]
    # The count read as unsigned: negative counts are out of range too.
    oob = b.astype(ut).astype(np.uint64) >= np.uint64(bits)
    n = np.where(oob, 0, b).astype(ut)
    if op == 'shift-left':
        r = np.left_shift(a.astype(ut), n)
        return np.where(oob, 0, r).astype(ut).astype(dt)
    if op == 'shift-right-logical':
        r = np.right_shift(a.astype(ut), n)
        return np.where(oob, 0, r).astype(ut).astype(dt)
    s = a.astype(st)
    r = np.right_shift(s, n.astype(st))
    fill = np.where(s < 0, -1, 0).astype(st)
    return np.where(oob, fill, r).astype(st).astype(dt)


def ew_binary(ev, inst, ops):
    op = inst.opcode
    a, b = ops
    t = ev.etype(inst, 0)
    with _errstate():
        if is_float(t):
            x, y = as_f64(a), as_f64(b)
            if op == 'add':
                return x + y
            if op == 'subtract':
                return x - y
            if op == 'multiply':
                return x * y
            if op == 'divide':
                return x / y
            if op == 'remainder':
                return np.fmod(x, y)
            if op == 'maximum':
                return np.maximum(x, y)         # NaN wins
            if op == 'minimum':
                return np.minimum(x, y)
            if op == 'power':
                return np.power(x, y)
            if op == 'atan2':
                return np.arctan2(x, y)
            raise HloError('%s on %s' % (inst.where(), t))
        if t == 'pred':
            fn = {'and': np.logical_and, 'or': np.logical_or,
                  'xor': np.logical_xor, 'maximum': np.logical_or,
                  'minimum': np.logical_and, 'add': np.logical_or,
                  'multiply': np.logical_and}.get(op)
            if fn is None:
                raise HloError('%s on pred' % inst.where())
            return fn(a, b)
        dt = STORAGE[t]
        a, b = np.asarray(a).astype(dt), np.asarray(b).astype(dt)
        if op == 'add':
            return np.add(a, b, dtype=dt)
        if op == 'subtract':
            return np.subtract(a, b, dtype=dt)
        if op == 'multiply':
            return np.multiply(a, b, dtype=dt)
        if op == 'divide':
            return _int_divide(a, b, t)
        if op == 'remainder':
            return _int_remainder(a, b, t)
        if op == 'maximum':
            return np.maximum(a, b)
        if op == 'minimum':
            return np.minimum(a, b)
        if op == 'power':
            return _int_power(a, b, t)
        if op == 'and':
            return np.bitwise_and(a, b)
        if op == 'or':
            return np.bitwise_or(a, b)
        if op == 'xor':
            return np.bitwise_xor(a, b)
        if op.startswith('shift-'):
            return _shift(op, a, b, t)
    raise HloError('%s on %s' % (inst.where(), t))


UNARY_OPS = ('abs', 'negate', 'exponential', 'exponential-minus-one', 'log',
             'log-plus-one', 'sqrt', 'rsqrt', 'cbrt', 'tanh', 'logistic',
             'sine', 'cosine', 'tan', 'floor', 'ceil', 'round-nearest-afz',
             'round-nearest-even', 'sign', 'not', 'is-finite', 'erf',
             'popcnt', 'count-leading-zeros', 'real', 'imag', 'copy')
BINARY_OPS = ('add', 'subtract', 'multiply', 'divide', 'remainder',
              'maximum', 'minimum', 'power', 'atan2', 'and', 'or', 'xor',
              'shift-left', 'shift-right-arithmetic', 'shift-right-logical')
ELEMENTWISE = {}
for _op in UNARY_OPS:
    ELEMENTWISE[_op] = ew_unary
for _op in BINARY_OPS:
    ELEMENTWISE[_op] = ew_binary


def compare_values(a, b, t, direction, ctype):
    """XLA compare: FLOAT (partial order: NaN unordered), TOTALORDER, or
    SIGNED / UNSIGNED integer comparison."""
    if is_float(t) and ctype == 'TOTALORDER':
        a, b = total_order_key(a, t), total_order_key(b, t)
    elif is_float(t):
        a, b = as_f64(a), as_f64(b)
    elif ctype == 'UNSIGNED' and t != 'pred':
        a, b = _unsigned(a, t), _unsigned(b, t)
    elif ctype == 'SIGNED' and t in UNSIGNED:
        st = SINT_OF_BITS[BITS[t]]
        a, b = np.asarray(a).astype(st), np.asarray(b).astype(st)
    fn = {'EQ': np.equal, 'NE': np.not_equal, 'LT': np.less,
          'LE': np.less_equal, 'GT': np.greater,
          'GE': np.greater_equal}.get(direction)
    if fn is None:
        raise HloError('compare direction %s' % direction)
    with _errstate():
        return fn(a, b)


def convert_values(x, src, dst):
    """XLA convert. Float -> integer truncates toward zero, saturates at
    the type's range and turns NaN into 0; integer -> integer wraps;
    anything -> pred is x != 0; floats round to nearest even."""
    x = np.asarray(x)
    if dst == 'pred':
        return x != 0
    if src == 'pred':
        x = x.astype(np.int8)
        src = 's8'
    if is_float(dst):
        if is_float(src):
            return as_f64(x)
        if dst == 'bf16' or dst == 'f16':
            return x.astype(np.float64)     # exact up to 2^53, then rounded
        return x.astype(STORAGE[dst])
    if is_float(src):
        dt = STORAGE[dst]
        info = np.iinfo(dt)
        v = np.trunc(as_f64(x))
        hi = float(info.max)                # rounds up for 64-bit types
        over = v >= hi
        under = v <= float(info.min)
        nan = np.isnan(v)
        safe = np.where(over | under | nan, 0, v)
        out = safe.astype(dt)
        out = np.where(over, info.max, out)
        out = np.where(under, info.min, out)
        return np.where(nan, 0, out).astype(dt)
    return x.astype(STORAGE[dst])


def to_bits(x, t):
    """Values of type t -> their bit patterns (unsigned of the width)."""
    x = np.ascontiguousarray(np.asarray(x))
    if t == 'bf16':
        u = x.astype(np.float32).reshape(-1).view(np.uint32)
        return (u >> np.uint32(16)).astype(np.uint16).reshape(x.shape)
    if t == 'pred':
        return x.astype(np.uint8)
    return x.astype(STORAGE[t]).reshape(-1).view(UINT_OF_BITS[BITS[t]]) \
        .reshape(x.shape)


def from_bits(u, t):
    u = np.ascontiguousarray(np.asarray(u))
    if t == 'bf16':
        v = (u.astype(np.uint32) << np.uint32(16)).reshape(-1).view(np.float32)
        return v.reshape(u.shape)
    if t == 'pred':
        return u != 0
    return u.reshape(-1).view(STORAGE[t]).reshape(u.shape)


def reduce_precision(x, t, ebits, mbits):
    """XLA's reduce-precision on float32 or float64 bit patterns (f16 and
    bf16 go through float32)."""
    wide = 'f64' if t == 'f64' else 'f32'
    x = np.asarray(x).astype(STORAGE[wide])
    ut = np.uint64 if wide == 'f64' else np.uint32
    src_m = 52 if wide == 'f64' else 23
    src_e = 11 if wide == 'f64' else 8
    nbits = 64 if wide == 'f64' else 32
    v = np.ascontiguousarray(x).reshape(-1).view(ut).copy()
    with _errstate():
        if mbits < src_m:
            last = ut(1 << (src_m - mbits))
            base_bias = ut((int(last) >> 1) - 1)
            x_last = (v & last) >> ut(src_m - mbits)
            keep = ut(~(int(last) - 1) & ((1 << nbits) - 1))
            v = (v + x_last + base_bias) & keep
        if ebits < src_e:
            sign = ut(1 << (nbits - 1))
            expmask = ut(((1 << src_e) - 1) << src_m)
            bias = (1 << (src_e - 1)) - 1
            rbias = (1 << (ebits - 1)) - 1
            maxe = ut((bias + rbias) << src_m)
            mine = ut((bias - rbias) << src_m)
            xe = v & expmask
            over = xe > maxe
            under = xe <= mine
            zero = v & sign
            inf = zero | expmask
            v = np.where(over, inf, v)
            v = np.where(under, zero, v).astype(ut)
    r = v.view(STORAGE[wide]).reshape(x.shape)
    nan = np.isnan(x)
    if mbits > 0:
        r = np.where(nan, x, r)
    else:
        r = np.where(nan, np.inf, r)
    return r


# ---- opcodes: Evaluator.op_<opcode>(inst, operand values, lifted) ---------
# Each returns the result before finish() rounds it to the declared type.

def op_constant(self, inst, ops, lifted):
    def build(shape, lit):
        if shape.is_tuple():
            if not isinstance(lit, tuple) or len(lit) != len(shape.tuple):
                raise HloError('%s: constant does not match its tuple shape'
                               % inst.where())
            return tuple(build(s, x) for s, x in zip(shape.tuple, lit))
        if isinstance(lit, tuple):
            raise HloError('%s: tuple constant for an array' % inst.where())
        n = int(np.prod(shape.dims, dtype=np.int64))
        if len(lit) != n:
            raise HloError('%s: constant has %d values, the shape %d'
                           % (inst.where(), len(lit), n))
        t = shape.etype
        if t == 'pred':
            arr = np.array([bool(v) for v in lit], np.bool_)
        elif is_int(t):
            arr = np.array([int(v) for v in lit], dtype=STORAGE[t])
        else:
            arr = np.array([float(v) for v in lit], np.float64)
        return arr.reshape(shape.dims)
    return build(inst.shape, inst.literal)


def op_iota(self, inst, ops, lifted):
    d = attr_int(inst, 'iota_dimension')
    dims = inst.shape.dims
    shape = [1] * len(dims)
    shape[d] = dims[d]
    return np.broadcast_to(np.arange(dims[d]).reshape(shape), dims).copy()


def op_compare(self, inst, ops, lifted):
    return compare_values(ops[0], ops[1], self.etype(inst, 0),
                          attr_word(inst, 'direction'),
                          attr_word(inst, 'type'))


def op_select(self, inst, ops, lifted):
    p, a, b = ops
    if isinstance(a, tuple):
        raise Unsupported('%s: select of tuples' % inst.where())
    return np.where(p, a, b)


def op_clamp(self, inst, ops, lifted):
    lo, x, hi = ops
    t = self.etype(inst, 1)
    if is_float(t):
        lo, x, hi = as_f64(lo), as_f64(x), as_f64(hi)
        r = np.minimum(hi, np.maximum(x, lo))
        r = np.where(np.isnan(hi), hi, r)
        r = np.where(np.isnan(x), x, r)
        return np.where(np.isnan(lo), lo, r)
    return np.minimum(hi, np.maximum(x, lo))


def op_convert(self, inst, ops, lifted):
    return convert_values(ops[0], self.etype(inst, 0), inst.shape.etype)


def op_bitcast_convert(self, inst, ops, lifted):
    src, dst = self.etype(inst, 0), inst.shape.etype
    if src == 'token' or dst == 'token':
        raise Unsupported('%s: bitcast-convert of tokens' % inst.where())
    bits = to_bits(ops[0], src)
    sb, db = BITS[src], BITS[dst]
    if sb == db:
        return from_bits(bits, dst)
    # Different widths: the minor dimension splits or merges (little
    # endian, as XLA defines it on every backend).
    raw = np.ascontiguousarray(bits).reshape(-1).view(np.uint8)
    out = raw.view(UINT_OF_BITS[db])
    return from_bits(out, dst).reshape(inst.shape.dims)


def op_reduce_precision(self, inst, ops, lifted):
    return reduce_precision(ops[0], self.etype(inst, 0),
                            attr_int(inst, 'exponent_bits'),
                            attr_int(inst, 'mantissa_bits'))


def op_reshape(self, inst, ops, lifted):
    if lifted:
        return ops[0]
    return np.reshape(ops[0], inst.shape.dims)


def _major_to_minor(shape):
    """The dimensions of an array shape, most major first."""
    layout = getattr(shape, 'layout', None)
    n = len(shape.dims)
    return list(reversed(layout)) if layout else list(range(n))


def op_bitcast(self, inst, ops, lifted):
    """A bitcast reinterprets the buffer: the operand's elements in its
    layout's physical order, read back in the result's layout."""
    src = inst.operands[0].shape
    if src.is_tuple() or src.etype != inst.shape.etype:
        raise Unsupported('%s: bitcast that changes the type (its meaning '
                          'depends on layouts)' % inst.where())
    if lifted:
        return ops[0]
    x = np.asarray(ops[0])
    flat = np.transpose(x, _major_to_minor(src)).reshape(-1)
    order = _major_to_minor(inst.shape)
    phys = flat.reshape([inst.shape.dims[d] for d in order])
    return np.transpose(phys, np.argsort(order))


def op_copy(self, inst, ops, lifted):
    return ops[0]


def op_transpose(self, inst, ops, lifted):
    return np.transpose(ops[0], attr_ints(inst, 'dimensions'))


def op_reverse(self, inst, ops, lifted):
    dims = attr_ints(inst, 'dimensions')
    return np.flip(ops[0], axis=tuple(dims)) if dims else ops[0]


def op_broadcast(self, inst, ops, lifted):
    (x,) = ops
    if lifted:
        return x
    x = np.asarray(x)
    out = inst.shape.dims
    dims = attr_ints(inst, 'dimensions', default=[] if x.ndim == 0 else None)
    if len(dims) != x.ndim:
        raise HloError('%s: dimensions= has %d entries for rank %d'
                       % (inst.where(), len(dims), x.ndim))
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order)
    shape = [1] * len(out)
    for j, i in enumerate(order):
        shape[dims[i]] = x.shape[j]
    return np.broadcast_to(x.reshape(shape), out).copy()


def op_slice(self, inst, ops, lifted):
    sl = attr_slice(inst)
    return ops[0][tuple(slice(a, b, s) for a, b, s in sl)]


def _clamped_starts(inst, ops, operand, sizes):
    """dynamic-(update-)slice start indices: one scalar per dimension (or
    the old single index vector), clamped so the window fits."""
    idx = ops
    if len(idx) == 1 and np.asarray(idx[0]).ndim == 1:
        idx = list(np.asarray(idx[0]))
    if len(idx) != operand.ndim:
        raise HloError('%s: %d start indices for rank %d'
                       % (inst.where(), len(idx), operand.ndim))
    starts = []
    for d, s in enumerate(idx):
        s = int(np.asarray(s).astype(np.int64))
        starts.append(min(max(s, 0), operand.shape[d] - sizes[d]))
    return starts


def op_dynamic_slice(self, inst, ops, lifted):
    x = ops[0]
    sizes = attr_ints(inst, 'dynamic_slice_sizes')
    starts = _clamped_starts(inst, ops[1:], x, sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


def op_dynamic_update_slice(self, inst, ops, lifted):
    x, upd = ops[0], np.asarray(ops[1])
    starts = _clamped_starts(inst, ops[2:], x, upd.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, upd.shape))] = upd
    return out


def op_concatenate(self, inst, ops, lifted):
    (d,) = attr_ints(inst, 'dimensions')
    return np.concatenate([np.asarray(o) for o in ops], axis=d)


def op_pad(self, inst, ops, lifted):
    x, pv = np.asarray(ops[0]), np.asarray(ops[1])
    cfg = attr_padding(inst, x.ndim)
    for d, (lo, hi, interior) in enumerate(cfg):
        n = x.shape[d]
        dil = n + max(n - 1, 0) * interior
        shape = list(x.shape)
        shape[d] = max(lo, 0) + dil + max(hi, 0)
        out = np.empty(shape, dtype=x.dtype)
        out[...] = pv
        idx = [slice(None)] * x.ndim
        idx[d] = slice(max(lo, 0), max(lo, 0) + dil, interior + 1)
        out[tuple(idx)] = x
        # Negative padding crops.
        idx[d] = slice(-min(lo, 0), shape[d] - (-min(hi, 0)))
        x = out[tuple(idx)]
    return x


def op_tuple(self, inst, ops, lifted):
    return tuple(ops)


def op_get_tuple_element(self, inst, ops, lifted):
    v = ops[0]
    if not isinstance(v, tuple):
        raise HloError('%s: operand is not a tuple' % inst.where())
    return v[attr_int(inst, 'index')]


def op_get_dimension_size(self, inst, ops, lifted):
    (d,) = attr_ints(inst, 'dimensions')
    return np.array(np.asarray(ops[0]).shape[d])


def _compute_in(t_result, *xs):
    """Operands of a dot or convolution in the result type's arithmetic:
    float64 for float results, int64 (wrapping) for integers."""
    if is_float(t_result):
        return [as_f64(x) for x in xs]
    return [np.asarray(x).astype(np.int64) for x in xs]


def op_dot(self, inst, ops, lifted):
    if 'sparsity' in inst.attrs:
        raise Unsupported('%s: sparse dot' % inst.where())
    t = inst.shape.etype
    lhs, rhs = _compute_in(t, *ops)
    lb = attr_ints(inst, 'lhs_batch_dims', [])
    rb = attr_ints(inst, 'rhs_batch_dims', [])
    lc = attr_ints(inst, 'lhs_contracting_dims', [])
    rc = attr_ints(inst, 'rhs_contracting_dims', [])
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    bshape = [lhs.shape[d] for d in lb]
    B = int(np.prod(bshape, dtype=np.int64))
    M = int(np.prod([lhs.shape[d] for d in lf], dtype=np.int64))
    N = int(np.prod([rhs.shape[d] for d in rf], dtype=np.int64))
    K = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    a = np.transpose(lhs, lb + lf + lc).reshape(B, M, K)
    b = np.transpose(rhs, rb + rc + rf).reshape(B, K, N)
    with _errstate():
        r = np.matmul(a, b)
    return r.reshape(bshape + [lhs.shape[d] for d in lf] +
                     [rhs.shape[d] for d in rf])


def parse_dim_labels(inst, nsp):
    """dim_labels=b01f_01io->b01f -> (lhs batch, feature, spatials),
    (kernel out, in, spatials), (out batch, feature, spatials)."""
    text = attr_word(inst, 'dim_labels')
    if text is None:
        text = 'bf' + ''.join(map(str, range(nsp)))
        text = '%s_oi%s->%s' % (text, text[2:], text)
    m = re.fullmatch(r'([0-9bf]+)_([0-9io]+)->([0-9bf]+)', text)
    if not m:
        raise HloError('%s: dim_labels=%s' % (inst.where(), text))

    def find(s, a, b):
        sp = [s.index(str(i)) for i in range(len(s) - 2)]
        return s.index(a), s.index(b), sp
    return find(m.group(1), 'b', 'f'), find(m.group(2), 'o', 'i'), \
        find(m.group(3), 'b', 'f')


def op_convolution(self, inst, ops, lifted):
    t = inst.shape.etype
    lhs, rhs = _compute_in(t, *ops)
    nsp = lhs.ndim - 2
    (ib, if_, isp), (ko, ki, ksp), (ob, of, osp) = parse_dim_labels(inst, nsp)
    w = attr_window(inst, nsp)
    G = attr_int(inst, 'feature_group_count', 1)
    BG = attr_int(inst, 'batch_group_count', 1)
    # Canonical layouts: lhs (N, C, S...), kernel (O, I, K...).
    x = np.transpose(lhs, [ib, if_] + isp)
    k = np.transpose(rhs, [ko, ki] + ksp)
    for d in range(nsp):
        if w['rhs_reversal'][d]:
            k = np.flip(k, axis=2 + d)
    N, C = x.shape[:2]
    O, I = k.shape[:2]
    ksz = k.shape[2:]
    if C != I * G or O % G or O % BG or N % BG:
        raise HloError('%s: features %d, kernel %dx%d, groups %d/%d'
                       % (inst.where(), C, O, I, G, BG))
    # Output spatial sizes, from the padded, dilated input.
    out_sp = []
    for d in range(nsp):
        n = x.shape[2 + d]
        dil_n = (n - 1) * w['lhs_dilate'][d] + 1 if n else 0
        lo, hi = w['pad'][d][:2]
        padded = dil_n + lo + hi
        eff = (ksz[d] - 1) * w['rhs_dilate'][d] + 1
        out_sp.append(max(0, (padded - eff) // w['stride'][d] + 1)
                      if padded >= eff else 0)
    Nb = N // BG
    acc = np.zeros((Nb, O) + tuple(out_sp),
                   np.float64 if is_float(t) else np.int64)
    Og, Ob = O // G, O // BG
    for kpos in np.ndindex(*ksz):
        # Input positions this kernel tap reads, per spatial dimension;
        # holes of the base dilation and padding contribute nothing.
        idx, ok = [], []
        for d in range(nsp):
            o = np.arange(out_sp[d])
            u = o * w['stride'][d] - w['pad'][d][0] + \
                kpos[d] * w['rhs_dilate'][d]
            ld = w['lhs_dilate'][d]
            src = u // ld
            valid = (u >= 0) & (u % ld == 0) & (src < x.shape[2 + d])
            idx.append(np.where(valid, src, 0))
            ok.append(valid)
        if not all(v.any() for v in ok):
            continue
        sub = x
        mask = np.ones((1, 1) + tuple(out_sp), bool)
        for d in range(nsp):
            sub = np.take(sub, idx[d], axis=2 + d)
            shp = [1] * (2 + nsp)
            shp[2 + d] = out_sp[d]
            mask = mask & ok[d].reshape(shp)
        sub = np.where(mask, sub, 0)
        tap = k[(slice(None), slice(None)) + kpos]          # (O, I)
        with _errstate():
            if BG > 1:
                # Output features are batch_group_count groups; group g
                # reads input batches [g*Nb, (g+1)*Nb).
                for g in range(BG):
                    xs = sub[g * Nb:(g + 1) * Nb]
                    ws = tap[g * Ob:(g + 1) * Ob]
                    acc[:, g * Ob:(g + 1) * Ob] += np.einsum(
                        'nc...,oc->no...', xs, ws)
            else:
                for g in range(G):
                    xs = sub[:, g * I:(g + 1) * I]
                    ws = tap[g * Og:(g + 1) * Og]
                    acc[:, g * Og:(g + 1) * Og] += np.einsum(
                        'nc...,oc->no...', xs, ws)
    # Back to the output's dim labels.
    perm = [0] * (2 + nsp)
    perm[ob], perm[of] = 0, 1
    for d in range(nsp):
        perm[osp[d]] = 2 + d
    res = np.transpose(acc, perm)
    if not is_float(t):
        info = np.iinfo(STORAGE[t]) if t != 'pred' else None
        if info is not None:
            res = np.clip(res, info.min, info.max)     # as HloEvaluator
    return res


# ---- reductions, windows, gather / scatter, sort --------------------------

def simple_reducer(comp):
    """'add', 'maximum', ... when the computation is that binary opcode of
    its two parameters; 'assign' when it returns its second parameter
    (scatter's overwrite), else None."""
    if len(comp.params) != 2:
        return None
    root = comp.root
    p0, p1 = comp.params[0], comp.params[1]
    if root is p1:
        return 'assign'
    if root.opcode in UFUNCS and len(root.operands) == 2 and \
            set(o.name for o in root.operands) == {p0.name, p1.name} and \
            root.shape.etype == p0.shape.etype == p1.shape.etype:
        return root.opcode
    return None


def op_reduce(self, inst, ops, lifted):
    n = len(ops) // 2
    xs, inits = [np.asarray(o) for o in ops[:n]], ops[n:]
    axes = attr_ints(inst, 'dimensions')
    comp = self.comp(inst, 'to_apply')
    keep = [d for d in range(xs[0].ndim) if d not in axes]
    out_shape = tuple(xs[0].shape[d] for d in keep)
    kind = simple_reducer(comp) if n == 1 else None
    t = self.etype(inst, 0)
    if kind in UFUNCS:
        uf, wide = ufunc_for(kind, t)
        x, init = (as_f64(xs[0]), as_f64(inits[0])) if wide else \
            (xs[0], np.asarray(inits[0]))
        with _errstate():
            r = uf.reduce(x, axis=tuple(axes), initial=init[()]) if axes \
                else uf(init, x)
        return r
    # Any other reducer: a pairwise tree over the reduced elements (XLA
    # leaves the order open), then the init value once.
    R = int(np.prod([xs[0].shape[d] for d in axes], dtype=np.int64))
    vals = [np.transpose(x, keep + axes).reshape(out_shape + (R,))
            for x in xs]
    if R == 0:
        res = [np.broadcast_to(np.asarray(i), out_shape).copy() for i in inits]
        return tuple(res) if n > 1 else res[0]
    while vals[0].shape[-1] > 1:
        m = vals[0].shape[-1]
        h = m // 2
        left = [v[..., 0:2 * h:2] for v in vals]
        right = [v[..., 1:2 * h:2] for v in vals]
        comb = leaves_of(self.apply(comp, left + right))
        if m % 2:
            comb = [np.concatenate([c, v[..., m - 1:]], axis=-1)
                    for c, v in zip(comb, vals)]
        vals = comb
    vals = [v[..., 0] for v in vals]
    res = leaves_of(self.apply(comp, [np.asarray(i) for i in inits] + vals))
    res = [np.broadcast_to(r, out_shape).copy() for r in res]
    return tuple(res) if n > 1 else res[0]


def _window_taps(shape, w, out_shape):
    """For reduce-window / select-and-scatter: yields, per window tap in
    row-major order, index arrays into the operand (clipped) and a mask of
    the output positions where the tap reads a real element (not padding,
    not a hole of the base dilation)."""
    rank = len(shape)
    for kpos in np.ndindex(*w['size']):
        idx, mask = [], np.ones(out_shape, bool)
        for d in range(rank):
            o = np.arange(out_shape[d])
            u = o * w['stride'][d] - w['pad'][d][0] + \
                kpos[d] * w['rhs_dilate'][d]
            ld = w['lhs_dilate'][d]
            src = u // ld
            ok = (u >= 0) & (u % ld == 0) & (src < shape[d])
            shp = [1] * rank
            shp[d] = out_shape[d]
            idx.append(np.where(ok, src, 0).reshape(shp))
            mask = mask & ok.reshape(shp)
        yield tuple(idx), mask


def op_reduce_window(self, inst, ops, lifted):
    n = len(ops) // 2
    xs, inits = [np.asarray(o) for o in ops[:n]], ops[n:]
    comp = self.comp(inst, 'to_apply')
    w = attr_window(inst, xs[0].ndim)
    out_shape = (inst.shape.tuple[0] if inst.shape.is_tuple()
                 else inst.shape).dims
    kind = simple_reducer(comp) if n == 1 else None
    t = self.etype(inst, 0)
    if kind in UFUNCS:
        uf, wide = ufunc_for(kind, t)
        x = as_f64(xs[0]) if wide else xs[0]
        init = as_f64(inits[0]) if wide else np.asarray(inits[0])
        acc = np.broadcast_to(init, out_shape).copy()
        with _errstate():
            for idx, mask in _window_taps(xs[0].shape, w, out_shape):
                acc = np.where(mask, uf(acc, x[idx]), acc)
        return acc
    acc = [np.broadcast_to(np.asarray(i), out_shape).copy() for i in inits]
    for idx, mask in _window_taps(xs[0].shape, w, out_shape):
        if not mask.any():
            continue
        new = leaves_of(self.apply(comp, acc + [x[idx] for x in xs]))
        acc = [np.where(mask, nv, a) for nv, a in zip(new, acc)]
    return tuple(acc) if n > 1 else acc[0]


def combine_at(self, comp, results, targets, updates, types):
    """results[k][targets[j]] = comp(results..[targets[j]], updates..[j])
    for j in order (scatter's and select-and-scatter's update rule).
    results are flat arrays, modified in place."""
    if len(targets) == 0:
        return
    kind = simple_reducer(comp) if len(results) == 1 else None
    if kind == 'assign':
        results[0][targets] = updates[0]        # in order: the last wins
        return
    if kind in UFUNCS:
        uf, wide = ufunc_for(kind, types[0])
        if wide:
            acc = as_f64(results[0])
            uf.at(acc, targets, as_f64(updates[0]))
            results[0][...] = to_type(acc, types[0])
        else:
            with _errstate():
                uf.at(results[0], targets, np.asarray(updates[0]).astype(
                    results[0].dtype))
        return
    # In rounds: round r applies every target's r-th update, so the
    # updates of one target stay in order and each round is vectorised.
    order = np.argsort(targets, kind='stable')
    st = targets[order]
    first = np.r_[True, st[1:] != st[:-1]]
    pos = np.arange(len(st))
    start = np.maximum.accumulate(np.where(first, pos, 0))
    rank = np.empty(len(st), np.int64)
    rank[order] = pos - start
    for r in range(int(rank.max()) + 1):
        sel = np.nonzero(rank == r)[0]
        tg = targets[sel]
        cur = [res[tg] for res in results]
        new = leaves_of(self.apply(comp, cur + [u[sel] for u in updates]))
        for res, nv, ty in zip(results, new, types):
            res[tg] = to_type(nv, ty)


def op_select_and_scatter(self, inst, ops, lifted):
    x, src, init = np.asarray(ops[0]), np.asarray(ops[1]), ops[2]
    sel = self.comp(inst, 'select')
    sca = self.comp(inst, 'scatter')
    w = attr_window(inst, x.ndim)
    out_shape = src.shape
    flat_ids = np.arange(x.size).reshape(x.shape)
    best = np.zeros(out_shape, x.dtype)
    best_id = np.zeros(out_shape, np.int64)
    have = np.zeros(out_shape, bool)
    for idx, mask in _window_taps(x.shape, w, out_shape):
        if not mask.any():
            continue
        v = np.broadcast_to(x[idx], out_shape)
        vid = np.broadcast_to(flat_ids[idx], out_shape)
        take = mask & ~have
        both = mask & have
        if both.any():
            keep = np.asarray(self.apply(sel, [best, v]))
            take = take | (both & ~keep)
        best = np.where(take, v, best)
        best_id = np.where(take, vid, best_id)
        have = have | mask
    t = inst.shape.etype
    result = np.broadcast_to(np.asarray(init), x.shape).copy().reshape(-1)
    combine_at(self, sca, [result], best_id[have], [src[have]], [t])
    return result.reshape(x.shape)


def _index_vectors(idx, ivd):
    """Start indices with the index vector dimension moved last."""
    idx = np.asarray(idx).astype(np.int64)
    if ivd == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, ivd, -1)


def _batch_coord(batch_shape, axis):
    shp = [1] * len(batch_shape)
    shp[axis] = batch_shape[axis]
    return np.broadcast_to(np.arange(batch_shape[axis]).reshape(shp),
                           batch_shape)


def op_gather(self, inst, ops, lifted):
    x = np.asarray(ops[0])
    offset_dims = attr_ints(inst, 'offset_dims')
    collapsed = attr_ints(inst, 'collapsed_slice_dims', [])
    sim = attr_ints(inst, 'start_index_map')
    ivd = attr_int(inst, 'index_vector_dim')
    sizes = attr_ints(inst, 'slice_sizes')
    obd = attr_ints(inst, 'operand_batching_dims', [])
    sibd = attr_ints(inst, 'start_indices_batching_dims', [])
    idx = _index_vectors(ops[1], ivd)
    batch = idx.shape[:-1]
    if idx.shape[-1] != len(sim):
        raise HloError('%s: index vectors of %d, start_index_map of %d'
                       % (inst.where(), idx.shape[-1], len(sim)))
    rank = x.ndim
    start = np.zeros(batch + (rank,), np.int64)
    for k, d in enumerate(sim):
        start[..., d] = idx[..., k]
    for d in range(rank):       # clamped so the slice fits
        start[..., d] = np.clip(start[..., d], 0, x.shape[d] - sizes[d])
    for od, sd in zip(obd, sibd):
        start[..., od] = _batch_coord(batch, sd if sd < ivd else sd - 1)
    window = [d for d in range(rank) if d not in collapsed and d not in obd]
    nb, nw = len(batch), len(window)
    index = []
    for d in range(rank):
        s = start[..., d].reshape(batch + (1,) * nw)
        if d in window:
            j = window.index(d)
            shp = [1] * (nb + nw)
            shp[nb + j] = sizes[d]
            s = s + np.arange(sizes[d]).reshape(shp)
        index.append(s)
    full = batch + tuple(sizes[d] for d in window)
    r = np.asarray(x[tuple(np.broadcast_to(i, full) for i in index)]) \
        if rank else np.broadcast_to(x, full)
    if len(offset_dims) != nw:
        raise HloError('%s: %d offset_dims for %d window dimensions'
                       % (inst.where(), len(offset_dims), nw))
    perm = [0] * (nb + nw)
    bpos = [i for i in range(nb + nw) if i not in offset_dims]
    for b, p in enumerate(bpos):
        perm[p] = b
    for j, p in enumerate(offset_dims):
        perm[p] = nb + j
    return np.transpose(r, perm)


def op_scatter(self, inst, ops, lifted):
    n = (len(ops) - 1) // 2
    xs = [np.asarray(o) for o in ops[:n]]
    upds = [np.asarray(u) for u in ops[n + 1:]]
    uwd = attr_ints(inst, 'update_window_dims')
    iwd = attr_ints(inst, 'inserted_window_dims', [])
    sdod = attr_ints(inst, 'scatter_dims_to_operand_dims')
    ivd = attr_int(inst, 'index_vector_dim')
    ibd = attr_ints(inst, 'input_batching_dims', [])
    sibd = attr_ints(inst, 'scatter_indices_batching_dims', [])
    comp = self.comp(inst, 'to_apply')
    idx = _index_vectors(ops[n], ivd)
    sshape = idx.shape[:-1]
    rank = xs[0].ndim
    u0 = upds[0]
    usd = [d for d in range(u0.ndim) if d not in uwd]
    if tuple(u0.shape[d] for d in usd) != sshape:
        raise HloError('%s: update scatter dims %s, indices %s'
                       % (inst.where(), [u0.shape[d] for d in usd],
                          list(sshape)))
    start = np.zeros(sshape + (rank,), np.int64)
    for k, d in enumerate(sdod):
        start[..., d] = idx[..., k]
    for od, sd in zip(ibd, sibd):
        start[..., od] = _batch_coord(sshape, sd if sd < ivd else sd - 1)
    window = [d for d in range(rank) if d not in iwd and d not in ibd]
    if len(window) != len(uwd):
        raise HloError('%s: %d update_window_dims for %d window dimensions'
                       % (inst.where(), len(uwd), len(window)))
    wshape = tuple(u0.shape[d] for d in uwd)
    wsize = [1] * rank
    for j, d in enumerate(window):
        wsize[d] = wshape[j]
    # A window that does not fit entirely is skipped (HloEvaluator).
    valid = np.ones(sshape, bool)
    for d in range(rank):
        valid &= (start[..., d] >= 0) & \
            (start[..., d] <= xs[0].shape[d] - wsize[d])
    ns, nw = len(sshape), len(wshape)
    full = sshape + wshape
    index = []
    for d in range(rank):
        s = np.where(valid, start[..., d], 0).reshape(sshape + (1,) * nw)
        if d in window:
            j = window.index(d)
            shp = [1] * (ns + nw)
            shp[ns + j] = wshape[j]
            s = s + np.arange(wshape[j]).reshape(shp)
        index.append(np.broadcast_to(s, full))
    vmask = np.broadcast_to(valid.reshape(sshape + (1,) * nw), full)
    targets = np.ravel_multi_index(tuple(index), xs[0].shape)[vmask] \
        if rank else np.zeros(int(vmask.sum()), np.int64)
    vals = [np.transpose(u, usd + uwd)[vmask] for u in upds]
    results = [x.copy().reshape(-1) for x in xs]
    types = [s.etype for s in inst.shape.leaves()]
    combine_at(self, comp, results, targets, vals, types)
    res = [r.reshape(x.shape) for r, x in zip(results, xs)]
    return tuple(res) if n > 1 else res[0]


def _sort_key(x, t, descending):
    """Keys whose ascending order is the comparator's order."""
    if is_float(t):
        k = total_order_key(x, t).astype(np.uint64)
    elif t in UNSIGNED or t == 'pred':
        k = np.asarray(x).astype(np.uint64)
    else:
        k = np.asarray(x).astype(np.int64)
    return ~k if descending else k


def simple_comparator(comp):
    """(operand, descending) when the comparator is one compare of
    parameters 2k and 2k+1 with LT or GT, else None."""
    root = comp.root
    if root.opcode != 'compare' or len(root.operands) != 2:
        return None
    a, b = root.operands
    if a.opcode != 'parameter' or b.opcode != 'parameter':
        return None
    d = attr_word(root, 'direction')
    if d not in ('LT', 'GT') or a.param // 2 != b.param // 2 or \
            a.param == b.param:
        return None
    desc = (d == 'GT') == (a.param % 2 == 0)
    return a.param // 2, desc


def op_sort(self, inst, ops, lifted):
    xs = [np.asarray(o) for o in ops]
    (dim,) = attr_ints(inst, 'dimensions')
    comp = self.comp(inst, 'to_apply')
    mv = [np.moveaxis(x, dim, -1) for x in xs]
    shape = mv[0].shape
    m = shape[-1] if shape else 1
    simple = simple_comparator(comp)
    if simple is not None:
        k, desc = simple
        key = _sort_key(mv[k], self.etype(inst, k), desc)
        perm = np.argsort(key, axis=-1, kind='stable')
    else:
        # Position of element i = the elements the comparator puts
        # before it, plus the equivalent ones with a smaller index
        # (stable); computed for all pairs at once, a slab of rows at a
        # time.
        rows = mv[0].reshape(-1, m)
        R = rows.shape[0]
        flat = [v.reshape(R, m) for v in mv]
        perm = np.empty((R, m), np.int64)
        step = max(1, int(4e6 // max(m * m, 1)))
        ii = np.arange(m)
        for r0 in range(0, R, step):
            sl = slice(r0, min(R, r0 + step))
            args = []
            for v in flat:
                args.append(v[sl][:, :, None])      # lhs: element i
                args.append(v[sl][:, None, :])      # rhs: element j
            less = np.asarray(self.apply(comp, args)).astype(bool)
            before = less.transpose(0, 2, 1)        # [r, i, j]: j before i
            equiv = ~less & ~before
            earlier = ii[None, None, :] < ii[None, :, None]      # j < i
            pos = before.sum(axis=2) + (equiv & earlier).sum(axis=2)
            for r in range(pos.shape[0]):
                if len(set(pos[r].tolist())) != m:
                    raise Unsupported('%s: the comparator is not a strict '
                                      'weak order' % inst.where())
                perm[r0 + r][pos[r]] = ii
        perm = perm.reshape(shape)
    out = [np.moveaxis(np.take_along_axis(v, perm, axis=-1), -1, dim)
           for v in mv]
    return tuple(out) if len(out) > 1 or inst.shape.is_tuple() else out[0]


def op_topk(self, inst, ops, lifted):
    x = np.asarray(ops[0])
    k = attr_int(inst, 'k')
    largest = attr_bool(inst, 'largest', True)
    key = _sort_key(x, self.etype(inst, 0), largest)
    perm = np.argsort(key, axis=-1, kind='stable')[..., :k]
    return (np.take_along_axis(x, perm, axis=-1), perm)


# ---- control flow, calls, collectives, batch norm, custom calls -----------

def op_call(self, inst, ops, lifted):
    return self.call(self.comp(inst, 'to_apply'), ops, lifted)


def op_fusion(self, inst, ops, lifted):
    return self.call(self.comp(inst, 'calls'), ops, lifted)


def op_map(self, inst, ops, lifted):
    return self.apply(self.comp(inst, 'to_apply'), ops)


def op_while(self, inst, ops, lifted):
    cond = self.comp(inst, 'condition')
    body = self.comp(inst, 'body')
    (state,) = ops
    for _ in range(WHILE_CAP):
        if not bool(np.asarray(self.call(cond, [state]))):
            return state
        state = self.call(body, [state])
    raise Unsupported('%s: more than %d iterations (with these inputs '
                      'the loop may never end: a "// vtpu: input" range '
                      'can keep it finite)' % (inst.where(), WHILE_CAP))


def op_conditional(self, inst, ops, lifted):
    sel = np.asarray(ops[0])
    if 'branch_computations' in inst.attrs:
        names = attr_comp_names(inst, 'branch_computations')
        i = int(sel.astype(np.int64))
        if i < 0 or i >= len(names):
            i = len(names) - 1              # out of range: the last branch
    else:
        names = [self.comp(inst, 'true_computation').name,
                 self.comp(inst, 'false_computation').name]
        i = 0 if bool(sel) else 1
    if len(ops) != len(names) + 1:
        raise HloError('%s: %d branches, %d branch operands'
                       % (inst.where(), len(names), len(ops) - 1))
    return self.call(self.comp_named(inst, names[i]), [ops[1 + i]])


def _identity(inst, ops):
    return ops[0] if len(ops) == 1 else tuple(ops)


def op_optimization_barrier(self, inst, ops, lifted):
    return ops[0]


op_opt_barrier = op_optimization_barrier


def op_domain(self, inst, ops, lifted):
    return ops[0]


def op_after_all(self, inst, ops, lifted):
    return TOKEN


def op_add_dependency(self, inst, ops, lifted):
    return ops[0]


def op_partition_id(self, inst, ops, lifted):
    return np.array(0)          # a single partition


def op_replica_id(self, inst, ops, lifted):
    return np.array(0)          # a single replica


def _single_participant(self, inst, ops):
    """A collective on one replica and one partition gives its operand
    back (an all-reduce reduces one value; gathers gather one piece)."""
    out = _identity(inst, ops)
    for v, s in zip(leaves_of(out), inst.shape.leaves()):
        if tuple(np.asarray(v).shape) != s.dims:
            raise Unsupported('%s: collective over more than one '
                              'participant' % inst.where())
    return out


def op_all_reduce(self, inst, ops, lifted):
    return _single_participant(self, inst, ops)


op_all_gather = op_reduce_scatter = op_all_to_all = op_all_reduce
op_collective_broadcast = op_all_reduce


def op_collective_permute(self, inst, ops, lifted):
    pairs = attr_int_lists(inst, 'source_target_pairs') \
        if 'source_target_pairs' in inst.attrs else []
    if [0, 0] in pairs:
        return _single_participant(self, inst, ops)
    # Nobody sends to device 0: its output is zeros.
    return np.zeros(inst.shape.dims, np.asarray(ops[0]).dtype)


def _feature_shape(x, fi):
    shp = [1] * x.ndim
    shp[fi] = x.shape[fi]
    return shp


def op_batch_norm_inference(self, inst, ops, lifted):
    x, scale, offset, mean, var = [as_f64(o) for o in ops]
    eps = attr_float(inst, 'epsilon', 0.0)
    fi = attr_int(inst, 'feature_index')
    shp = _feature_shape(x, fi)
    with _errstate():
        return (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * \
            scale.reshape(shp) + offset.reshape(shp)


def op_batch_norm_training(self, inst, ops, lifted):
    x, scale, offset = [as_f64(o) for o in ops]
    eps = attr_float(inst, 'epsilon', 0.0)
    fi = attr_int(inst, 'feature_index')
    shp = _feature_shape(x, fi)
    axes = tuple(d for d in range(x.ndim) if d != fi)
    mean = x.mean(axis=axes)
    var = ((x - mean.reshape(shp)) ** 2).mean(axis=axes)   # biased
    with _errstate():
        y = (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * \
            scale.reshape(shp) + offset.reshape(shp)
    return (y, mean, var)


def op_batch_norm_grad(self, inst, ops, lifted):
    x, scale, mean, var, dy = [as_f64(o) for o in ops]
    eps = attr_float(inst, 'epsilon', 0.0)
    fi = attr_int(inst, 'feature_index')
    shp = _feature_shape(x, fi)
    axes = tuple(d for d in range(x.ndim) if d != fi)
    xm = x - mean.reshape(shp)
    with _errstate():
        inv = 1.0 / np.sqrt(var + eps)
        d_offset = dy.sum(axis=axes)
        d_scale = (dy * xm).sum(axis=axes) * inv
        c = (dy * xm).mean(axis=axes) / (var + eps)
        dx = (scale * inv).reshape(shp) * (dy - dy.mean(axis=axes).reshape(shp)
                                           - xm * c.reshape(shp))
    return (dx, d_scale, d_offset)


# custom-call targets with plain semantics on one device: annotations that
# give their operand back.
IDENTITY_TARGETS = ('Sharding', 'SPMDFullToShardShape', 'SPMDShardToFullShape',
                    'MoveToHost', 'MoveToDevice', 'LayoutConstraint',
                    'annotate_device_placement', 'AllocateBuffer_identity')


def op_custom_call(self, inst, ops, lifted):
    target = attr_word(inst, 'custom_call_target', '')
    if target in IDENTITY_TARGETS and len(ops) == 1:
        return _single_participant(self, inst, ops)
    if target == 'TopK' and len(ops) == 1:
        x = np.asarray(ops[0])
        k = inst.shape.tuple[0].dims[-1]
        key = _sort_key(x, self.etype(inst, 0), True)
        perm = np.argsort(key, axis=-1, kind='stable')[..., :k]
        return (np.take_along_axis(x, perm, axis=-1), perm)
    raise Unsupported("custom-call target '%s' (%s)" % (target, inst.where()))


def op_rng_bit_generator(self, inst, ops, lifted):
    raise Unsupported('rng-bit-generator (%s): its bits are '
                      'implementation-defined' % inst.where())


def op_rng(self, inst, ops, lifted):
    raise Unsupported('rng (%s): random numbers' % inst.where())


for _name, _fn in list(globals().items()):
    if _name.startswith('op_') and callable(_fn):
        setattr(Evaluator, _name, _fn)


# ---- directives, inputs, outputs ------------------------------------------

RE_DIRECTIVE = re.compile(r'//\s*vtpu:\s*(.*)$')


class Directives:
    def __init__(self):
        self.inputs = {}        # input index -> ('int'|'uniform', lo, hi)
        #                          or ('values', [...])
        self.tol_all = None     # (rtol, atol) for every output
        self.tol = {}           # output index -> (rtol, atol)
        self.constructs = None


def _number(word, line):
    try:
        return int(word)
    except ValueError:
        try:
            return float(word)
        except ValueError:
            raise HloError('line %d: %r is not a number' % (line, word))


def parse_directives(text):
    d = Directives()
    for ln, line in enumerate(text.splitlines(), 1):
        m = RE_DIRECTIVE.search(line)
        if not m:
            continue
        w = m.group(1).split()
        if not w:
            continue
        if w[0] == 'input':
            if len(w) < 3 or not w[1].isdigit():
                raise HloError('line %d: "// vtpu: input N KIND ..."' % ln)
            i, kind = int(w[1]), w[2]
            if kind in ('int', 'uniform'):
                if len(w) != 5:
                    raise HloError('line %d: "input %d %s" wants LO HI'
                                   % (ln, i, kind))
                lo, hi = _number(w[3], ln), _number(w[4], ln)
                if not lo < hi:
                    raise HloError('line %d: empty range [%s, %s)'
                                   % (ln, w[3], w[4]))
                d.inputs[i] = (kind, lo, hi)
            elif kind == 'values':
                vals = []
                for v in w[3:]:
                    v = v.rstrip(',')
                    if v in ('true', 'false'):
                        vals.append(1 if v == 'true' else 0)
                    elif v in ('inf', '-inf', 'nan'):
                        vals.append(float(v))
                    elif v:
                        vals.append(_number(v, ln))
                d.inputs[i] = ('values', vals)
            else:
                raise HloError('line %d: input kind %r (int, uniform or '
                               'values)' % (ln, kind))
        elif w[0] == 'tolerance':
            rest, idx = w[1:], None
            if rest and rest[0].isdigit():
                idx, rest = int(rest[0]), rest[1:]
            tol = {}
            if len(rest) % 2 or not rest:
                raise HloError('line %d: "tolerance [N] rtol X atol Y"' % ln)
            for k in range(0, len(rest), 2):
                if rest[k] not in ('rtol', 'atol'):
                    raise HloError('line %d: tolerance wants rtol / atol, '
                                   'not %r' % (ln, rest[k]))
                tol[rest[k]] = float(rest[k + 1])
            pair = (tol.get('rtol'), tol.get('atol'))
            if idx is None:
                d.tol_all = pair
            else:
                d.tol[idx] = pair
        elif w[0] == 'constructs':
            d.constructs = ' '.join(w[1:])
        else:
            print('hlo_ref: line %d: unknown directive "%s" (ignored)'
                  % (ln, w[0]), file=sys.stderr)
    return d


def make_input(shape, spec, rng, i):
    t, dims = shape.etype, shape.dims
    n = int(np.prod(dims, dtype=np.int64))
    if t == 'token':
        raise Unsupported('a token-typed ENTRY parameter')
    if spec and spec[0] == 'values':
        vals = spec[1]
        if len(vals) != n:
            raise HloError('input %d: %d values for %s (%d elements)'
                           % (i, len(vals), shape, n))
        if is_float(t):
            return to_type(np.array(vals, np.float64).reshape(dims), t)
        if t == 'pred':
            return np.array(vals).reshape(dims) != 0
        return np.array([int(v) for v in vals], STORAGE[t]).reshape(dims)
    if spec and spec[0] == 'uniform':
        if not is_float(t):
            raise HloError('input %d: uniform for %s (use int)' % (i, t))
        return to_type(rng.uniform(spec[1], spec[2], size=dims), t)
    if spec and spec[0] == 'int':
        lo, hi = int(math.ceil(spec[1])), int(math.ceil(spec[2]))
        v = rng.integers(lo, hi, size=dims)
        if is_int(t):
            info = np.iinfo(STORAGE[t])
            if lo < info.min or hi - 1 > info.max:
                raise HloError('input %d: [%d, %d) does not fit %s'
                               % (i, lo, hi, t))
            return v.astype(STORAGE[t])
        return to_type(v.astype(np.float64), t) if is_float(t) else v != 0
    if is_float(t):
        return to_type(rng.uniform(-1.0, 1.0, size=dims), t)
    if t == 'pred':
        return rng.integers(0, 2, size=dims) != 0
    return rng.integers(0, 8, size=dims).astype(STORAGE[t])


def rebuild(shape, leaves):
    """Leaf values -> the (possibly nested tuple) value of shape."""
    if not shape.is_tuple():
        return leaves.pop(0)
    return tuple(rebuild(s, leaves) for s in shape.tuple)


def tolerance(shape, i, d):
    rtol, atol = TOLERANCE.get(shape.etype, (0.0, 0.0))
    for pair in (d.tol_all, d.tol.get(i)):
        if pair:
            rtol = pair[0] if pair[0] is not None else rtol
            atol = pair[1] if pair[1] is not None else atol
    return rtol, atol


def run(module_path, outdir, seed):
    with open(module_path, encoding='utf-8') as f:
        text = f.read()
    d = parse_directives(text)
    mod = Parser(text).parse_module()
    entry = mod.entry
    if seed is None:
        seed = zlib.crc32(os.path.basename(module_path).encode())
    rng = np.random.default_rng(seed)
    leaf_shapes = []
    for k in range(len(entry.params)):
        leaf_shapes.extend(entry.params[k].shape.leaves())
    for i in d.inputs:
        if i >= len(leaf_shapes):
            raise HloError('directive for input %d: the module has %d'
                           % (i, len(leaf_shapes)))
    inputs = [make_input(s, d.inputs.get(i), rng, i)
              for i, s in enumerate(leaf_shapes)]
    pool = list(inputs)
    args = [rebuild(entry.params[k].shape, pool)
            for k in range(len(entry.params))]
    # The inputs first: they explain a module that cannot be evaluated.
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        if re.fullmatch(r'(input|output)_\d+\.npy|meta\.txt', f):
            os.remove(os.path.join(outdir, f))
    for i, v in enumerate(inputs):
        np.save(os.path.join(outdir, 'input_%d.npy' % i),
                np.asarray(v, order='C'))   # .npy readers want C order
    ev = Evaluator(mod)
    result = ev.call(entry, args)
    outs = leaves_of(result)
    out_shapes = entry.root.shape.leaves()
    for v, s in zip(outs, out_shapes):
        if v is TOKEN or s.etype == 'token':
            raise Unsupported('a token in the ENTRY result')
    meta = []
    for i, (v, s) in enumerate(zip(outs, out_shapes)):
        np.save(os.path.join(outdir, 'output_%d.npy' % i),
                np.asarray(v, STORAGE[s.etype], order='C'))
        rtol, atol = tolerance(s, i, d)
        meta.append('%d %s %g %g\n' % (i, s, rtol, atol))
    with open(os.path.join(outdir, 'meta.txt'), 'w') as f:
        f.writelines(meta)


def compare(refdir, gotdir):
    """--compare: 0 when every output agrees, else 1 with one line each."""
    bad = []
    with open(os.path.join(refdir, 'meta.txt')) as f:
        meta = [ln.split() for ln in f if ln.strip()]
    for i, shape, rtol, atol in meta:
        rtol, atol = float(rtol), float(atol)
        name = 'output_%s' % i
        path = os.path.join(gotdir, name + '.npy')
        if not os.path.exists(path):
            bad.append('%s: missing' % name)
            continue
        ref = np.load(os.path.join(refdir, name + '.npy'))
        got = np.load(path)
        if ref.shape != got.shape:
            if ref.size == got.size:
                got = got.reshape(ref.shape)    # a shape-only difference
            else:
                bad.append('%s: shape %s, expected %s (%s)'
                           % (name, list(got.shape), list(ref.shape), shape))
                continue
        if ref.dtype.kind in 'biu' and got.dtype.kind in 'biu':
            if ref.dtype == got.dtype:
                ok = ref == got
            else:
                ok = ref.astype(object) == got.astype(object)
            ok = np.asarray(ok, bool)
            err = np.zeros(ref.shape)
        else:
            r, g = ref.astype(np.float64), got.astype(np.float64)
            with _errstate():
                err = np.abs(g - r)
                ok = (r == g) | (np.isnan(r) & np.isnan(g)) | \
                    (err <= atol + rtol * np.abs(r))
            err = np.where(ok, 0, np.where(np.isnan(err), np.inf, err))
        if not ok.all():
            k = int(np.argmax(err.reshape(-1))) if err.any() else \
                int(np.argmin(ok.reshape(-1)))
            at = np.unravel_index(k, ref.shape) if ref.ndim else ()
            bad.append('%s: %d of %d elements differ, worst at %s: got %s, '
                       'expected %s (rtol %g, atol %g)'
                       % (name, int((~ok).sum()), ok.size, list(at),
                          got.reshape(-1)[k], ref.reshape(-1)[k], rtol, atol))
    if bad:
        print('\n'.join(bad))
        return 1
    print('ok')
    return 0


class ArgParser(argparse.ArgumentParser):
    """Usage errors exit 1: status 2 means "cannot evaluate"."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print('hlo_ref.py: error: %s' % message, file=sys.stderr)
        sys.exit(1)


def main(argv):
    np.seterr(all='ignore')
    warnings.simplefilter('ignore', RuntimeWarning)
    if argv and argv[0] == '--compare':
        if len(argv) != 3:
            print('usage: hlo_ref.py --compare REFDIR GOTDIR', file=sys.stderr)
            return 1
        return compare(argv[1], argv[2])
    ap = ArgParser(
        description='NumPy reference interpreter for XLA HLO text.')
    ap.add_argument('module', help='the HLO text module')
    ap.add_argument('outdir', help='where input_N.npy, output_N.npy and '
                    'meta.txt go')
    ap.add_argument('--seed', type=int, default=None,
                    help='input seed (default: crc32 of the file name)')
    args = ap.parse_args(argv)
    try:
        run(args.module, args.outdir, args.seed)
    except Unsupported as e:
        print('hlo_ref: %s: cannot evaluate: %s' % (args.module, e),
              file=sys.stderr)
        return 2
    except (HloError, OSError) as e:
        print('hlo_ref: %s: %s' % (args.module, e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
