// What every mlsched subcommand shares: argument parsing, the two kinds of
// failure (wrong usage vs. a problem met while working) and JSON printing.
#pragma once

#include <json-c/json.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlsched::tool {

// The user asked for something the command does not take: exit 2 and a hint.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The command understood the request but could not do it: exit 1.
struct ToolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Options as "--name value", "--name=value" or bare flags, plus positionals.
class Args {
 public:
  explicit Args(std::vector<std::string> argv) : argv_(std::move(argv)), used_(argv_.size(), false) {}

  bool flag(const std::string& name);
  // Value of an option that takes one; "" when absent.
  std::string value(const std::string& name);
  // Next unused positional argument; "" when none.
  std::string positional();
  // Fails with a UsageError naming whatever was not understood.
  void expect_no_more(const std::string& command);

 private:
  std::vector<std::string> argv_;
  std::vector<bool> used_;
};

// Prints and frees.
void print_json(json_object* obj);

int cmd_topo(Args& args);
int cmd_why(Args& args);

}  // namespace mlsched::tool
