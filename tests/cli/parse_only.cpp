// Parses a weft command line as the tool does and stops there: exit 0 when the parser accepts
// it (or prints help), else the tool's code and message. The docs' and the planner's command
// lines are replayed through it (replay_commands.py) without running what they ask for.
#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  const weft::cli::parsed p = weft::cli::parse(argc, argv);
  if (p.run) return 0;
  std::cerr << p.err;
  return p.exit_code;
}
