// The lexical rules of LPU.g4, hand-coded as an ANTLR token source.
//
// ANTLR's generated lexer spends thousands of instructions a token (a DFA
// walk under a lock, several dynamic_casts, a token factory); this one spends
// tens. LPU.g4 stays the specification: a differential test
// (tests/unit/frontend/LexerTest.cpp) checks that both lexers give the same
// tokens on every .lpu file of the repository and on random input. Token
// types are LPULexer's; comments come on the hidden channel; whitespace
// (WS, NEWLINE) is not produced: a tool that needs it has it in the gaps
// between tokens.
#pragma once

#include <antlr4-runtime.h>

#include <string>

namespace lpu::grammar {

class FastLexer : public antlr4::TokenSource {
public:
  /// `text` is the source as code points (and must outlive the lexer);
  /// `input` is the stream the tokens refer to for their text.
  FastLexer(const std::u32string &text, antlr4::CharStream *input);
  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() override;
  antlr4::CharStream *getInputStream() override;
  std::string getSourceName() override;
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override;

private:
  char32_t at(size_t i) const;
  size_t digitsEnd(size_t i) const;
  size_t exponentEnd(size_t i) const;
  std::pair<size_t, size_t> number(size_t p) const; // {type, end}
  std::unique_ptr<antlr4::Token> make(size_t type, size_t begin, size_t end,
                                      size_t channel = antlr4::Token::DEFAULT_CHANNEL);

  const std::u32string &text_;
  antlr4::CharStream *input_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t lineStart_ = 0;
};

} // namespace lpu::grammar
