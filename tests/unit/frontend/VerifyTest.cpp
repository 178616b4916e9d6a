// The -verify checker: matching by severity, line, column, code, text,
// regex and count, and reporting both directions of mismatch.
#include "frontend/Verify.h"

#include "ParseHelpers.h"

#include <gtest/gtest.h>

using lpu::test::parse;

namespace {

std::pair<bool, std::string> verify(llvm::StringRef text) {
  auto p = parse(text);
  std::string out;
  llvm::raw_string_ostream os(out);
  bool ok = lpu::verifyDiagnostics(*p->sources, p->bufferId, p->diagnostics.diagnostics, os);
  os.flush();
  return {ok, out};
}

TEST(VerifyTest, MatchingExpectationsPass) {
  EXPECT_TRUE(verify("const A = 1 # 2 // expected-error {{unexpected character}}\n").first);
  EXPECT_TRUE(verify("// expected-error@+1:13 {{unexpected character '#'}}\nconst A = 1 # 2\n").first);
  EXPECT_TRUE(verify("const A = 1 # 2\n// expected-error@-1 {{'#'}}\n").first);
  EXPECT_TRUE(verify("// expected-error[E0001]@2 {{re:character '.'$}}\nconst A = 1 # 2\n").first);
  EXPECT_TRUE(verify("// expected-no-diagnostics\nconst A = 1\n").first);
}

TEST(VerifyTest, MismatchesFailAndSayWhy) {
  auto [ok, out] = verify("// expected-error@+1:12 {{unexpected character '#'}}\nconst A = 1 # 2\n");
  EXPECT_FALSE(ok);
  EXPECT_NE(out.find("test.lpu:2:12: expected error not produced"), std::string::npos) << out;
  EXPECT_NE(out.find("test.lpu:2:13: unexpected error[E0001]"), std::string::npos) << out;

  std::tie(ok, out) = verify("// expected-warning@+1 {{unexpected character}}\nconst A = 1 # 2\n");
  EXPECT_FALSE(ok) << "severity must match";

  std::tie(ok, out) = verify("// expected-error[E0004]@+1 {{unexpected character}}\nconst A = 1 # 2\n");
  EXPECT_FALSE(ok) << "code must match";

  std::tie(ok, out) = verify("// expected-error@+1 2 {{unexpected character}}\nconst A = 1 # 2\n");
  EXPECT_FALSE(ok);
  EXPECT_NE(out.find("(1 of 2 seen)"), std::string::npos) << out;

  std::tie(ok, out) = verify("// expected-error@+1 {{re:[unclosed}}\nconst A = 1 # 2\n");
  EXPECT_FALSE(ok);
  EXPECT_NE(out.find("invalid regex"), std::string::npos) << out;

  std::tie(ok, out) = verify("// expected-error@+1 unexpected\nconst A = 1 # 2\n");
  EXPECT_FALSE(ok);
  EXPECT_NE(out.find("malformed directive"), std::string::npos) << out;
}

TEST(VerifyTest, NotesMatchAtTheirOwnLocation) {
  const char *text = "fn f() -> f16 {\n"
                     "  // expected-error@+1 {{expected ')' to close '('}}\n"
                     "  return g(x\n"
                     "  // expected-note@+1:1 {{found '}' instead}}\n"
                     "}\n";
  auto [ok, out] = verify(text);
  EXPECT_TRUE(ok) << out;
}

} // namespace
