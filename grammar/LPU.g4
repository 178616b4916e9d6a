// The .lpu language: the one grammar, source of the lexer and parser.
//
// Comments live on the HIDDEN channel (never skipped) so that the formatter
// can recover every one of them. Tokens that are lexical errors (stray
// characters, malformed numbers, unterminated strings and block comments) are
// real tokens here; frontend/ reports them and repairs the token stream before
// the parser sees it, so one lexical slip does not cascade into syntax errors.
//
// Expression precedence, loosest to tightest (docs/language.md):
//   ||   &&   comparisons (== != < <= > >=, not chainable)   + -
//   * / % @   unary - !   ** (right-associative)   postfix: call, index, member
grammar LPU;

// ---------------------------------------------------------------- modules

module : item* EOF ;

item
  : importDecl
  | constDecl
  | fnDecl
  | modelDecl
  | entryDecl
  ;

importDecl
  : IMPORT dottedName (AS IDENT)?       # importModule
  | IMPORT STRING AS IDENT              # importFile
  ;

dottedName : IDENT (DOT IDENT)* ;

constDecl : CONST IDENT (COLON typeExpr)? ASSIGN expr ;

fnDecl
  : FN IDENT genericParams? LPAREN (fnParam (COMMA fnParam)* COMMA?)? RPAREN
    ARROW (typeExpr | resultTuple) whereClause? block
  ;

// Several results: `-> (logits: f16[S, V], next: i32[1])`; names optional.
resultTuple : LPAREN resultField (COMMA resultField)+ COMMA? RPAREN ;

resultField : (IDENT COLON)? typeExpr ;

fnParam : IDENT COLON typeExpr ;

genericParams : LT genericParam (COMMA genericParam)* COMMA? GT ;

genericParam
  : DOTDOT IDENT                        # packParam
  | IDENT COLON IDENT                   # kindedParam
  | IDENT (ASSIGN sizeExpr)?            # sizeParam
  ;

whereClause : WHERE constraint (COMMA constraint)* ;

constraint : sizeExpr compareOp sizeExpr ;

compareOp : EQ | NE | LT | LE | GT | GE ;

modelDecl : MODEL IDENT genericParams? LBRACE modelMember* RBRACE ;

modelMember
  : paramDecl
  | fnDecl
  | constDecl
  ;

// `param` a weight; `state` a tensor that lives between calls (zeros at
// the start), which the model's fns may assign.
paramDecl : (PARAM | STATE) IDENT COLON typeExpr ;

entryDecl : ENTRY IDENT ASSIGN pathSegment (DOT pathSegment)* ;

pathSegment : IDENT genericArgs? ;

// ---------------------------------------------------------------- types

typeExpr
  : LBRACK sizeExpr RBRACK typeExpr                       # arrayType
  | IDENT (DOT IDENT)* genericArgs? dims?                 # namedType
  ;

dims : LBRACK (dim (COMMA dim)* COMMA?)? RBRACK ;

dim
  : DOTDOT IDENT                        # packDim
  | sizeExpr                            # sizeDim
  ;

genericArgs : LT (genericArg (COMMA genericArg)* COMMA?)? GT ;

genericArg
  : IDENT ASSIGN genericValue                                         # namedGenericArg
  | IDENT IN LBRACE (sizeExpr (COMMA sizeExpr)* COMMA?)? RBRACE       # bucketGenericArg
  | genericValue                                                      # positionalGenericArg
  ;

// A bare name is read as a size; the checker reinterprets it as a dtype where
// the parameter is `T: dtype`. Anything with dots, generic arguments or
// dimensions is a type.
genericValue
  : sizeExpr
  | typeExpr
  ;

// Size expressions: integers, size names, + - * / %, min/max/floordiv/ceildiv.
// Left-recursive like expr, for the same reason (one rule invocation a leaf).
sizeExpr
  : (INT | HEX_INT)                                        # sizeInt
  | IDENT LPAREN sizeExpr (COMMA sizeExpr)* COMMA? RPAREN  # sizeCall
  | IDENT                                                  # sizeName
  | LPAREN sizeExpr RPAREN                                 # sizeParen
  | sizeExpr (STAR | SLASH | PERCENT) sizeExpr             # sizeMul
  | sizeExpr (PLUS | MINUS) sizeExpr                       # sizeAdd
  ;

// ---------------------------------------------------------------- statements

block : LBRACE stmt* RBRACE ;

stmt
  : LET (IDENT (COLON typeExpr)? | LPAREN IDENT (COMMA IDENT)+ COMMA? RPAREN)
    ASSIGN expr                                           # letStmt
  | VAR IDENT (COLON typeExpr)? ASSIGN expr               # varStmt
  | IDENT ASSIGN expr                                     # assignStmt
  | RETURN expr                                           # returnStmt
  | ASSERT expr (COMMA STRING)?                           # assertStmt
  | FOR IDENT IN expr DOTDOT expr block                   # forStmt
  | ifStmt                                                # ifStatement
  | expr                                                  # exprStmt
  ;

ifStmt : IF expr block (ELSE (ifStmt | block))? ;

// ---------------------------------------------------------------- expressions

// One left-recursive rule: ANTLR turns it into precedence climbing, so a
// name costs one rule invocation instead of one per precedence level.
// Earlier alternatives bind tighter. A prefix operator's operand is parsed at
// the prefix level, so `-x ** 2` is `-(x ** 2)` and `-a * b` is `(-a) * b`.
expr
  : primaryExpr                                                           # primary
  | expr DOT IDENT genericArgs LPAREN (callArg (COMMA callArg)* COMMA?)? RPAREN  # memberGenericCall
  | expr LPAREN (callArg (COMMA callArg)* COMMA?)? RPAREN                  # callExpr
  | expr LBRACK indexItem (COMMA indexItem)* COMMA? RBRACK
    (genericArgs LPAREN (callArg (COMMA callArg)* COMMA?)? RPAREN)?       # indexExpr
  | expr DOT IDENT                                                        # memberExpr
  | <assoc=right> expr POW expr                                           # powerExpr
  | (MINUS | BANG) expr                                                   # prefixExpr
  | expr (STAR | SLASH | PERCENT | AT) expr                               # mulExpr
  | expr (PLUS | MINUS) expr                                              # addExpr
  | expr compareOp expr                                                   # compareExpr
  | expr ANDAND expr                                                      # andExpr
  | expr OROR expr                                                        # orExpr
  ;

callArg : (IDENT ASSIGN)? expr ;

indexItem
  : expr? COLON expr?                                     # sliceItem
  | expr                                                  # exprItem
  ;

// A call with generic arguments names its function directly: `iota<N>()`,
// `nn.split_heads<H = 4>(x)`, or a member or an element of any expression
// (memberGenericCall and indexExpr's optional tail above:
// `blocks[i].forward<B = B>(x)`, `blocks[i]<B = B>(x)`). Each is listed
// before the plain name or member, or is greedy, so it wins where both
// readings parse (`f < a > (b)`, which as comparisons would be chained);
// docs/language.md says so.
primaryExpr
  : IDENT (DOT IDENT)* genericArgs LPAREN (callArg (COMMA callArg)* COMMA?)? RPAREN  # genericCall
  | (INT | HEX_INT)                                       # intLit
  | FLOAT                                                 # floatLit
  | (TRUE | FALSE)                                        # boolLit
  | STRING                                                # stringLit
  | IDENT                                                 # nameExpr
  | LPAREN expr ((COMMA expr)+ COMMA?)? RPAREN            # parenExpr
  | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK            # listExpr
  ;

// ---------------------------------------------------------------- lexer

IMPORT : 'import' ;
AS     : 'as' ;
MODEL  : 'model' ;
PARAM  : 'param' ;
STATE  : 'state' ;
FN     : 'fn' ;
LET    : 'let' ;
VAR    : 'var' ;
RETURN : 'return' ;
FOR    : 'for' ;
IN     : 'in' ;
IF     : 'if' ;
ELSE   : 'else' ;
ENTRY  : 'entry' ;
WHERE  : 'where' ;
CONST  : 'const' ;
ASSERT : 'assert' ;
TRUE   : 'true' ;
FALSE  : 'false' ;

ARROW   : '->' ;
DOTDOT  : '..' ;
DOT     : '.' ;
COMMA   : ',' ;
COLON   : ':' ;
ASSIGN  : '=' ;
EQ      : '==' ;
NE      : '!=' ;
LE      : '<=' ;
GE      : '>=' ;
LT      : '<' ;
GT      : '>' ;
OROR    : '||' ;
ANDAND  : '&&' ;
BANG    : '!' ;
PLUS    : '+' ;
MINUS   : '-' ;
POW     : '**' ;
STAR    : '*' ;
SLASH   : '/' ;
PERCENT : '%' ;
AT      : '@' ;
LPAREN  : '(' ;
RPAREN  : ')' ;
LBRACK  : '[' ;
RBRACK  : ']' ;
LBRACE  : '{' ;
RBRACE  : '}' ;

// Numbers. Order matters on ties: a well-formed literal wins over BAD_NUMBER.
FLOAT
  : DIGITS '.' DIGITS EXPONENT?
  | DIGITS EXPONENT
  ;
HEX_INT : '0' [xX] [0-9a-fA-F] [0-9a-fA-F_]* ;
INT     : DIGITS ;
// A number run into letters or a dangling exponent: `12ab`, `1e`, `0x`, `1.5e+`.
BAD_NUMBER
  : DIGITS ('.' DIGITS)? [eE] [+-]?
  | [0-9] [0-9_]* ('.' [0-9_]+)? [a-zA-Z_] [a-zA-Z0-9_]*
  ;

fragment DIGITS   : [0-9] [0-9_]* ;
fragment EXPONENT : [eE] [+-]? [0-9] [0-9_]* ;

IDENT : [A-Za-z_] [A-Za-z0-9_]* ;

STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* ;

DOC_COMMENT   : '///' ~[\r\n]* -> channel(HIDDEN) ;
LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
// Only a comment with no '*/' anywhere after it: a longest-match lexer would
// otherwise prefer this rule (to EOF) over a closed BLOCK_COMMENT.
UNTERMINATED_BLOCK_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* EOF -> channel(HIDDEN) ;

NEWLINE : ('\r\n' | '\n' | '\r') -> channel(HIDDEN) ;
WS      : [ \t\f]+ -> channel(HIDDEN) ;

// Anything else is a stray character, reported by frontend/.
STRAY : . ;
