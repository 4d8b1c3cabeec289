//===- tools/common/OptionSuggest.h - the option a typo meant ---*- C++ -*-===//
//
// attnc (llvm::cl) and attn-run (CLI11) answer an unknown option the same
// way: one line, `<tool>: error: unknown option '--emt': did you mean
// '--emit'? (see <tool> --help)`, the suggestion only when an option is
// close to what was typed. llvm::cl names the nearest option however far it
// is ("--bogus": "Did you mean '-o'?") and CLI11 2.1 names none, so both
// tools take the suggestion from here. Plain C++17: attn-run links no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_COMMON_OPTIONSUGGEST_H
#define ATTN_TOOLS_COMMON_OPTIONSUGGEST_H

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnc::tools {

/// Edits (insert, delete, replace, or swap two neighbours) that turn `a`
/// into `b`: a swap counts once, as typing "--weigths" is one slip.
inline std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(
      a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

/// The name in `known` (option names without dashes) that `typed` (also
/// without dashes or value) most likely misspells: the nearest, when at
/// most a third of typed's characters (at least one, and never all of them)
/// need an edit; else "". Further off, a suggestion is noise: "bogus" is 4
/// edits from "o", "x" one.
inline std::string closestOption(std::string_view typed,
                                 const std::vector<std::string> &known) {
  std::size_t allowed = std::max<std::size_t>(1, typed.size() / 3);
  std::string best;
  std::size_t bestDistance = allowed + 1;
  for (const std::string &name : known)
    if (std::size_t d = editDistance(typed, name);
        d < bestDistance && d < typed.size()) {
      best = name;
      bestDistance = d;
    }
  return best;
}

/// The message of an unknown option `arg` as given ("--emt=mlir"), with
/// `suggestion` ("--emit", "" for none) and `tool`'s help. The suggestion
/// keeps arg's "=value".
inline std::string unknownOptionMessage(std::string_view tool,
                                        std::string_view arg,
                                        std::string_view suggestion) {
  std::string message = "unknown option '" + std::string(arg) + "'";
  if (!suggestion.empty()) {
    std::size_t eq = arg.find('=');
    message += ": did you mean '" + std::string(suggestion) +
               std::string(eq == arg.npos ? "" : arg.substr(eq)) + "'?";
  }
  return message + " (see " + std::string(tool) + " --help)";
}

} // namespace attnc::tools

#endif // ATTN_TOOLS_COMMON_OPTIONSUGGEST_H
