// Where the tool finds a preset's folder (presets/<name>/: config.json, job.json, cluster.json):
// $WEFT_PRESETS, then beside the installed tool (<prefix>/share/weft/presets), then the source
// tree it was built from.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <weft/core/error.hpp>
#include "commands.hpp"

namespace weft::cli {

std::filesystem::path preset_dir(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("WEFT_PRESETS"); env && *env) roots.emplace_back(env);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back(self.parent_path().parent_path() / "share" / "weft" / "presets");
#ifdef WEFT_SOURCE_PRESETS
  roots.emplace_back(WEFT_SOURCE_PRESETS);
#endif
  std::string tried;
  for (const fs::path& root : roots) {
    const fs::path dir = root / name;
    if (fs::exists(dir / "config.json", ec)) return dir;
    tried += (tried.empty() ? "" : ", ") + root.string();
  }
  throw config_error("weft: preset " + name + " not found in " +
                     (tried.empty() ? std::string("no folder") : tried) +
                     " (set WEFT_PRESETS to the folder that holds it)");
}

}  // namespace weft::cli
