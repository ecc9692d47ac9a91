// A growable array that stays cheap inside constant evaluation. std::vector's constexpr
// push_back and fill constructors cost several times more compiler time and memory per element
// than plain `new T[]` and indexing (docs/benchmarks.md), and weft builds and checks schedules of
// 100k ops at compile time, so its own containers use this.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <type_traits>

namespace weft {

template <class T>
class buffer {
  static_assert(std::is_default_constructible_v<T> && std::is_copy_assignable_v<T>,
                "weft::buffer<T> needs a default-constructible, copy-assignable T");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;

  constexpr buffer() noexcept = default;
  constexpr explicit buffer(size_type n) { resize(n); }
  constexpr buffer(size_type n, const T& v) { assign(n, v); }
  constexpr buffer(std::initializer_list<T> il) {
    reserve(il.size());
    for (const T& v : il) data_[size_++] = v;
  }
  constexpr buffer(const buffer& o) { *this = o; }
  constexpr buffer(buffer&& o) noexcept : data_(o.data_), size_(o.size_), cap_(o.cap_) {
    o.data_ = nullptr;
    o.size_ = o.cap_ = 0;
  }
  constexpr buffer& operator=(const buffer& o) {
    if (this == &o) return *this;
    size_ = 0;
    reserve(o.size_);
    for (size_type i = 0; i < o.size_; ++i) data_[i] = o.data_[i];
    size_ = o.size_;
    return *this;
  }
  constexpr buffer& operator=(buffer&& o) noexcept {
    if (this == &o) return *this;
    delete[] data_;
    data_ = o.data_;
    size_ = o.size_;
    cap_ = o.cap_;
    o.data_ = nullptr;
    o.size_ = o.cap_ = 0;
    return *this;
  }
  constexpr ~buffer() { delete[] data_; }

  constexpr void reserve(size_type n) {
    if (n <= cap_) return;
    T* fresh = new T[n];
    for (size_type i = 0; i < size_; ++i) fresh[i] = static_cast<T&&>(data_[i]);
    delete[] data_;
    data_ = fresh;
    cap_ = n;
  }
  /// New elements are value-initialised.
  constexpr void resize(size_type n) {
    reserve(n);
    for (size_type i = size_; i < n; ++i) data_[i] = T{};
    size_ = n;
  }
  /// Resizes for the caller to fill: elements of trivial types past the old size are left
  /// uninitialised; write each before reading it. Constant evaluation charges a write per
  /// element, so an array about to be written in full should not be filled first.
  constexpr void resize_for_overwrite(size_type n) {
    reserve(n);
    size_ = n;
  }
  constexpr void assign(size_type n, const T& v) {
    size_ = 0;
    reserve(n);
    for (size_type i = 0; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  template <class It>
  requires(!std::is_integral_v<It>) constexpr void assign(It first, It last) {
    size_ = 0;
    for (; first != last; ++first) push_back(*first);
  }
  constexpr void push_back(const T& v) {
    if (size_ == cap_) reserve(cap_ < 8 ? 8 : 2 * cap_);
    data_[size_++] = v;
  }
  /// Appends `n` elements for the caller to fill and returns a pointer to the first: the cheap
  /// way to append many elements in constant evaluation. New elements of trivial types are
  /// uninitialised; write each before reading it.
  constexpr T* extend(size_type n) {
    if (size_ + n > cap_) reserve(size_ + n > 2 * cap_ ? size_ + n : 2 * cap_);
    T* first = data_ + size_;
    size_ += n;
    return first;
  }
  constexpr void clear() noexcept { size_ = 0; }
  constexpr void pop_back() noexcept { --size_; }

  constexpr T* data() noexcept { return data_; }
  constexpr const T* data() const noexcept { return data_; }
  constexpr size_type size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T& operator[](size_type i) noexcept { return data_[i]; }
  constexpr const T& operator[](size_type i) const noexcept { return data_[i]; }
  constexpr T& back() noexcept { return data_[size_ - 1]; }
  constexpr const T& back() const noexcept { return data_[size_ - 1]; }
  constexpr T& front() noexcept { return data_[0]; }
  constexpr const T& front() const noexcept { return data_[0]; }
  friend constexpr bool operator==(const buffer& a, const buffer& b) {
    if (a.size_ != b.size_) return false;
    for (size_type i = 0; i < a.size_; ++i)
      if (!(a.data_[i] == b.data_[i])) return false;
    return true;
  }

  constexpr T* begin() noexcept { return data_; }
  constexpr T* end() noexcept { return data_ + size_; }
  constexpr const T* begin() const noexcept { return data_; }
  constexpr const T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_type size_ = 0;
  size_type cap_ = 0;
};

}  // namespace weft
