"""Context-free grammar workloads shared by every engine in the grammar benchmark.

Each workload is one language written twice:

- ``gbnf``: GBNF text (llama.cpp syntax). tokensieve compiles it with
  ``compile_grammar(text, syntax="gbnf")`` and xgrammar with
  ``compile_grammar(text)`` (its EBNF reads GBNF), so both get the very same
  text.
- ``lark``: the same language in Lark syntax, for llguidance. Terminals are
  UPPERCASE regexes; where the GBNF text puts a ``ws`` between every two
  lexemes, the Lark text says ``%ignore``.

Whitespace between lexemes is optional in every grammar, so the
character-level language (tokensieve, xgrammar) and the lexer-based one
(llguidance: lexemes are matched greedily) coincide on every example and
almost everywhere else; where they do not, the disputed-token report says so.

The examples are in the language: :func:`check_examples` parses each with the
``lark`` package (Earley, over the Lark text: an implementation that shares
nothing with tokensieve) and with the Earley recogniser of the test suite
(over the GBNF text).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GrammarWorkload", "GRAMMAR_WORKLOADS", "check_examples"]


@dataclass(frozen=True)
class GrammarWorkload:
    """One context-free benchmark case.

    Attributes
    ----------
    name
        Short identifier used in tables.
    gbnf
        The grammar in GBNF (root rule ``root``), for tokensieve and xgrammar.
    lark
        The same language in Lark syntax (root rule ``start``), for llguidance.
    examples
        Sentences of the language; each is walked token by token.
    kind
        Always ``"grammar"`` (the engine adapters dispatch on it).
    """

    name: str
    gbnf: str
    lark: str
    examples: tuple[str, ...]
    kind: str = "grammar"

    @property
    def constraint(self) -> str:
        """The GBNF text (what the JSON report records)."""
        return self.gbnf

    def as_regex(self) -> str:
        """Not a regular language: always raises ``TypeError``."""
        raise TypeError(f"workload {self.name!r} is a context-free grammar, not a regex")


# --------------------------------------------------------------------------- JSON

_JSON_GBNF = r"""
# JSON values; white space is at most 20 blanks, tabs or newlines at a time
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]{0,20}
"""

_JSON_LARK = r"""
start: ws value ws
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" ws (member (ws "," ws member)* ws)? "}"
member: STRING ws ":" ws value
array: "[" ws (value (ws "," ws value)* ws)? "]"
ws: WS?
STRING: /"([^"\\\x00-\x1f]|\\(["\\\/bfnrt]|u[0-9a-fA-F]{4}))*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/
WS: /[ \t\n]{1,20}/
"""

_JSON_EXAMPLES = (
    '{"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "computing"], "married": true}',
    '[1, -2.5, 3e10, 0.001, {"nested": {"deeper": [null, false, "x"]}}]',
    '{\n  "id": 42,\n  "tags": ["a", "b", "c"],\n  "price": 19.99,\n  "stock": {"warehouse": 120, "store": 7}\n}',
    '{"text": "line\\nbreak \\"quoted\\" \\u00e9t\\u00e9", "empty": {}, "list": []}',
    '{"matrix": [[1, 2, 3], [4, 5, 6], [7, 8, 9]], "ok": true, "note": null}',
    '{"user": {"login": "octo_cat", "id": 583231, "site_admin": false, "score": 1.5e-3}}',
)

# --------------------------------------------------------------------------- arithmetic

_ARITH_GBNF = r"""
# left-recursive arithmetic: + - * / with the usual precedence, unary minus, parentheses
root   ::= expr ws
expr   ::= expr ws "+" ws term | expr ws "-" ws term | term
term   ::= term ws "*" ws factor | term ws "/" ws factor | factor
factor ::= number | "(" ws expr ws ")" | "-" ws factor
number ::= [0-9]+ ( "." [0-9]+ )?
ws     ::= " "*
"""

_ARITH_LARK = r"""
start: expr
expr: expr "+" term | expr "-" term | term
term: term "*" factor | term "/" factor | factor
factor: NUMBER | "(" expr ")" | "-" factor
NUMBER: /[0-9]+(\.[0-9]+)?/
%ignore / +/
"""

_ARITH_EXAMPLES = (
    "1 + 2 * 3",
    "(12.5 - 3) * (4 + 5) / 6 - -7",
    "((1 + 2) * (3 + 4) - 5) / (6 - (7 * 8 + 9))",
    "3.14159 * 2 * 2 + 42 / 7 - 1000 * 0.001",
    "-(-(-(1 + 2))) * 10 - 8 / 4 / 2",
    "100 - 99 + 98 - 97 + 96 - 95 + 94 - 93 + 92 - 91",
)

# --------------------------------------------------------------------------- SQL

_SQL_GBNF = r"""
# a subset of SELECT: select list, FROM, WHERE with AND/OR/NOT and comparisons, ORDER BY, LIMIT
root      ::= query ws ( ";" ws )?
query     ::= "SELECT" ws ( "DISTINCT" ws )? selection ws "FROM" ws tables ( ws where )? ( ws orderby )? ( ws limit )?
selection ::= "*" | item ( ws "," ws item )*
item      ::= expr ( ws "AS" ws ident )?
tables    ::= table ( ws "," ws table )*
table     ::= ident ( ws "AS" ws ident )?
where     ::= "WHERE" ws cond
cond      ::= cond ws "OR" ws conj | conj
conj      ::= conj ws "AND" ws pred | pred
pred      ::= "NOT" ws pred | "(" ws cond ws ")" | expr ws cmp ws expr | expr ws "IS" ws ( "NOT" ws )? "NULL"
cmp       ::= "=" | "!=" | "<>" | "<=" | ">=" | "<" | ">"
expr      ::= expr ws [-+] ws term | term
term      ::= term ws [*/] ws atom | atom
atom      ::= number | string | column | call | "(" ws expr ws ")"
call      ::= ident ws "(" ws ( "*" | expr ( ws "," ws expr )* )? ws ")"
column    ::= ident ( ws "." ws ident )?
orderby   ::= "ORDER" ws "BY" ws order ( ws "," ws order )*
order     ::= expr ( ws ( "ASC" | "DESC" ) )?
limit     ::= "LIMIT" ws [0-9]+
ident     ::= [a-zA-Z_] [a-zA-Z0-9_]*
number    ::= [0-9]+ ( "." [0-9]+ )?
string    ::= "'" ( [^'] | "''" )* "'"
ws        ::= [ \t\n]*
"""

_SQL_LARK = r"""
start: query (";")?
query: "SELECT" ("DISTINCT")? selection "FROM" tables (where)? (orderby)? (limit)?
selection: "*" | item ("," item)*
item: expr ("AS" IDENT)?
tables: table ("," table)*
table: IDENT ("AS" IDENT)?
where: "WHERE" cond
cond: cond "OR" conj | conj
conj: conj "AND" pred | pred
pred: "NOT" pred | "(" cond ")" | expr CMP expr | expr "IS" ("NOT")? "NULL"
CMP: "=" | "!=" | "<>" | "<=" | ">=" | "<" | ">"
expr: expr ADDOP term | term
term: term MULOP atom | atom
ADDOP: "+" | "-"
MULOP: "*" | "/"
atom: NUMBER | STRING | column | call | "(" expr ")"
call: IDENT "(" ("*" | expr ("," expr)*)? ")"
column: IDENT ("." IDENT)?
orderby: "ORDER" "BY" order ("," order)*
order: expr ("ASC" | "DESC")?
limit: "LIMIT" INT
INT: /[0-9]+/
IDENT: /[a-zA-Z_][a-zA-Z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /'([^']|'')*'/
%ignore /[ \t\n]+/
"""

_SQL_EXAMPLES = (
    "SELECT * FROM users",
    "SELECT id, name, email FROM users WHERE age >= 18 AND country = 'FR' ORDER BY name ASC LIMIT 50;",
    "SELECT DISTINCT u.city AS city, COUNT(*) AS n FROM users AS u, orders AS o "
    "WHERE u.id = o.user_id AND (o.total > 100.5 OR o.status <> 'cancelled') ORDER BY n DESC, city LIMIT 10",
    "SELECT price * quantity - discount AS net FROM order_lines WHERE NOT shipped_at IS NULL AND qty < 3",
    "SELECT name FROM products WHERE category = 'it''s' OR price / 2 <= 9.99 ORDER BY price DESC",
    "SELECT\n  a,\n  b + 1\nFROM t\nWHERE a IS NOT NULL\nLIMIT 5",
)

# --------------------------------------------------------------------------- C-like

_CLIKE_GBNF = r"""
# a C-like language: functions, declarations, assignments, if/else, while, blocks, calls,
# expressions with seven precedence levels; // comments count as white space
root     ::= ( top ws )+
top      ::= function | stmt
function ::= type ws ident ws "(" ws params? ws ")" ws block
params   ::= param ( ws "," ws param )*
param    ::= type ws ident
type     ::= "int" | "float" | "char" | "bool" | "void"
block    ::= "{" ws ( stmt ws )* "}"
stmt     ::= decl | assign ws ";" | call ws ";" | if | while | block | "return" ( ws expr )? ws ";" | ";"
decl     ::= type ws declarator ( ws "," ws declarator )* ws ";"
declarator ::= ident ( ws "[" ws number ws "]" )? ( ws "=" ws expr )?
assign   ::= ident ( ws "[" ws expr ws "]" )? ws ( "=" | "+=" | "-=" | "*=" | "/=" ) ws expr
if       ::= "if" ws "(" ws expr ws ")" ws stmt ( ws "else" ws stmt )?
while    ::= "while" ws "(" ws expr ws ")" ws stmt
expr     ::= expr ws "||" ws and | and
and      ::= and ws "&&" ws eq | eq
eq       ::= eq ws ( "==" | "!=" ) ws rel | rel
rel      ::= rel ws ( "<=" | ">=" | "<" | ">" ) ws add | add
add      ::= add ws ( "+" | "-" ) ws mul | mul
mul      ::= mul ws ( "*" | "/" | "%" ) ws unary | unary
unary    ::= ( "-" | "!" ) ws unary | postfix
postfix  ::= primary ( ws "[" ws expr ws "]" )*
primary  ::= number | ident | call | string | "(" ws expr ws ")"
call     ::= ident ws "(" ws ( expr ( ws "," ws expr )* )? ws ")"
ident    ::= [a-zA-Z_] [a-zA-Z0-9_]*
number   ::= [0-9]+ ( "." [0-9]+ )?
string   ::= "\"" ( [^"\\\n] | "\\" [^\n] )* "\""
ws       ::= ( [ \t\n] | "//" [^\n]* "\n" )*
"""

_CLIKE_LARK = r"""
start: top+
?top: function | stmt
function: TYPE IDENT "(" params? ")" block
params: param ("," param)*
param: TYPE IDENT
TYPE: "int" | "float" | "char" | "bool" | "void"
block: "{" stmt* "}"
?stmt: decl | assign ";" | call ";" | ifstmt | whilestmt | block | "return" expr? ";" | ";"
decl: TYPE declarator ("," declarator)* ";"
declarator: IDENT ("[" NUMBER "]")? ("=" expr)?
assign: IDENT ("[" expr "]")? ASSIGNOP expr
ASSIGNOP: "=" | "+=" | "-=" | "*=" | "/="
ifstmt: "if" "(" expr ")" stmt ("else" stmt)?
whilestmt: "while" "(" expr ")" stmt
?expr: expr "||" andx | andx
?andx: andx "&&" eq | eq
?eq: eq EQOP rel | rel
?rel: rel RELOP add | add
?add: add ADDOP mul | mul
?mul: mul MULOP unary | unary
?unary: UNOP unary | postfix
?postfix: primary ("[" expr "]")*
?primary: NUMBER | IDENT | call | STRING | "(" expr ")"
call: IDENT "(" (expr ("," expr)*)? ")"
EQOP: "==" | "!="
RELOP: "<=" | ">=" | "<" | ">"
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
UNOP: "-" | "!"
IDENT: /[a-zA-Z_][a-zA-Z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /"([^"\\\n]|\\[^\n])*"/
%ignore /[ \t\n]+/
%ignore /\/\/[^\n]*\n/
"""

_CLIKE_EXAMPLES = (
    "int x = 1;\nx += 2;",
    "int gcd(int a, int b) {\n  while (b != 0) {\n    int t = b;\n    b = a % b;\n    a = t;\n  }\n"
    "  return a;\n}\n",
    'void greet(char name) {\n  // say hello\n  if (name == 0) print("nobody");\n'
    '  else {\n    print("hello, ", name);\n  }\n}\n',
    "float mean(float values, int n) {\n  float s = 0.0, i = 0;\n  while (i < n) { s += values[i]; i = i + 1; }\n"
    "  if (n > 0 && !(s < 0.5) || n == 1) return s / n; else return -1.0;\n}\n",
    "int main() {\n  int a[10];\n  int i = 0;\n  while (i < 10) { a[i] = i * i % 7 - (i + 1) * 2; i += 1; }\n"
    "  report(a, 10, sum(a, 10) >= 3 * max(a[0], a[9]));\n  return 0;\n}\n",
)

GRAMMAR_WORKLOADS: tuple[GrammarWorkload, ...] = (
    GrammarWorkload("json_gbnf", _JSON_GBNF, _JSON_LARK, _JSON_EXAMPLES),
    GrammarWorkload("arith", _ARITH_GBNF, _ARITH_LARK, _ARITH_EXAMPLES),
    GrammarWorkload("sql", _SQL_GBNF, _SQL_LARK, _SQL_EXAMPLES),
    GrammarWorkload("clike", _CLIKE_GBNF, _CLIKE_LARK, _CLIKE_EXAMPLES),
)


def check_examples(workload: GrammarWorkload) -> None:
    """Raise ``ValueError`` unless the ``lark`` package parses every example with the Lark text.

    Uses Lark's Earley parser with the ``dynamic_complete`` lexer, whose language
    is the character-level one (every split of the text into terminals is tried).
    """
    import lark

    parser = lark.Lark(workload.lark, parser="earley", lexer="dynamic_complete", start="start")
    for example in workload.examples:
        try:
            parser.parse(example)
        except lark.exceptions.LarkError as exc:
            raise ValueError(f"workload {workload.name!r}: lark rejects {example!r}: {exc}") from exc
