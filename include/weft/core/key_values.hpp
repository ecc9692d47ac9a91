// `key=value,key=value`: the one parser for the tool's `--cost`, the mask families' parameters and
// every other list of named numbers. Values are checked as they are read (finite, in range,
// whole where a count is meant); a key nobody asked for, or given twice, is an error.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>

namespace weft {

class key_values {
 public:
  /// Parses `text` ("" is no pairs). `what` starts every error message: "weft: <what>: ...".
  key_values(std::string_view text, std::string what) : what_(std::move(what)) {
    while (!text.empty()) {
      const std::size_t comma = text.find(',');
      const std::string_view item = text.substr(0, comma);
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0)
        fail("'" + std::string(item) + "' is not key=value");
      const std::string key(item.substr(0, eq));
      for (const entry& e : items_)
        if (e.key == key) fail(key + " is given twice");
      items_.push_back({key, std::string(item.substr(eq + 1)), false});
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
      if (text.empty()) fail("a trailing ',' ends the list");
    }
  }

  /// The value of `key` as a finite number in [lo, hi], or `fallback` when absent.
  double number(std::string_view key, double fallback, double lo, double hi) {
    entry* e = find(key);
    if (!e) return fallback;
    e->used = true;
    double v = 0;
    const std::string& t = e->value;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc{} || end != t.data() + t.size() || !std::isfinite(v) ||
        v < lo || v > hi)
      fail(std::string(key) + " needs a number in [" + show(lo) + ", " + show(hi) + "], got '" + t +
           "'");
    return v;
  }

  /// The value of `key` as a whole number in [lo, hi], or `fallback` when absent.
  long long whole(std::string_view key, long long fallback, long long lo, long long hi) {
    entry* e = find(key);
    if (!e) return fallback;
    e->used = true;
    long long v = 0;
    const std::string& t = e->value;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc{} || end != t.data() + t.size() || v < lo || v > hi)
      fail(std::string(key) + " needs a whole number in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got '" + t + "'");
    return v;
  }

  /// The value of `key`, one of `choices` (its index), or `fallback` when absent.
  int choice(std::string_view key, int fallback, std::initializer_list<std::string_view> choices) {
    entry* e = find(key);
    if (!e) return fallback;
    e->used = true;
    int i = 0;
    std::string list;
    for (const std::string_view c : choices) {
      if (e->value == c) return i;
      list += (i++ ? "|" : "") + std::string(c);
    }
    fail(std::string(key) + " is one of " + list + ", not '" + e->value + "'");
  }

  /// Throws for the first key no getter asked for; `known` lists the ones there are.
  void finish(std::string_view known) const {
    for (const entry& e : items_)
      if (!e.used)
        fail("unknown key '" + e.key + "'" +
             (known.empty() ? std::string(" (it takes none)") : " (" + std::string(known) + ")"));
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw config_error("weft: " + what_ + ": " + why);
  }

 private:
  struct entry {
    std::string key, value;
    bool used;
  };
  std::string what_;
  std::vector<entry> items_;

  entry* find(std::string_view key) noexcept {
    for (entry& e : items_)
      if (e.key == key) return &e;
    return nullptr;
  }
  static std::string show(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
};

}  // namespace weft
