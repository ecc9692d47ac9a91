// An array in fixed-size pages, for the per-op arrays a proof indexes in constant evaluation.
// g++'s evaluator pays for `p[i]` on a `new T[n]` pointer about twice what it pays for
// `pages[i / P].v[i % P]` — pointer arithmetic is rebuilt as trees on every access, an array
// member is indexed directly — and keeps a heap array's elements as a sorted list, so writing
// one out of order costs a move of the list's tail: within a page, at most P elements
// (docs/benchmarks.md, "What a proof cannot cost less than"). The pages are one allocation, so at
// run time the elements are contiguous and an index is a shift and a mask.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft {

template <class T>
class paged {
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                "weft::paged<T> holds trivially copyable values");

 public:
  using value_type = T;
  using size_type = std::size_t;
  /// Element i is `pages()[i >> page_shift].v[i & page_mask]`: what loops that constant
  /// evaluation runs per op write out, since a call (operator[]) costs it more than the access.
  static constexpr std::uint32_t page_shift = 10, page_mask = (1u << page_shift) - 1;
  static constexpr size_type page_size = size_type{1} << page_shift;
  struct page {
    T v[page_size];
  };

  constexpr paged() noexcept = default;
  constexpr paged(size_type n, const T& v) { assign(n, v); }
  constexpr paged(const paged& o) { *this = o; }
  constexpr paged(paged&& o) noexcept : pages_(o.pages_), size_(o.size_), cap_(o.cap_) {
    o.pages_ = nullptr;
    o.size_ = o.cap_ = 0;
  }
  constexpr paged& operator=(const paged& o) {
    if (this == &o) return *this;
    size_ = 0;
    reserve(o.size_);
    for (size_type i = 0; i < o.size_; ++i)
      pages_[i >> page_shift].v[i & page_mask] = o.pages_[i >> page_shift].v[i & page_mask];
    size_ = o.size_;
    return *this;
  }
  constexpr paged& operator=(paged&& o) noexcept {
    if (this == &o) return *this;
    delete[] pages_;
    pages_ = o.pages_;
    size_ = o.size_;
    cap_ = o.cap_;
    o.pages_ = nullptr;
    o.size_ = o.cap_ = 0;
    return *this;
  }
  constexpr ~paged() { delete[] pages_; }

  /// Room for `n` elements; the ones kept are copied.
  constexpr void reserve(size_type n) {
    if (n <= cap_) return;
    const size_type count = (n + page_size - 1) / page_size;
    page* fresh = new page[count];
    for (size_type i = 0; i < size_; ++i)
      fresh[i >> page_shift].v[i & page_mask] = pages_[i >> page_shift].v[i & page_mask];
    delete[] pages_;
    pages_ = fresh;
    cap_ = count * page_size;
  }
  /// Resizes for the caller to fill: new elements are uninitialised; write each before reading
  /// it (writing them in order is cheapest in constant evaluation).
  constexpr void resize_for_overwrite(size_type n) {
    reserve(n);
    size_ = n;
  }
  /// New elements are value-initialised.
  constexpr void resize(size_type n) {
    reserve(n);
    for (size_type i = size_; i < n; ++i) pages_[i >> page_shift].v[i & page_mask] = T{};
    size_ = n;
  }
  constexpr void assign(size_type n, const T& v) {
    size_ = 0;
    reserve(n);
    for (size_type i = 0; i < n; ++i) pages_[i >> page_shift].v[i & page_mask] = v;
    size_ = n;
  }
  /// `n` zeros, allocated at once: constant evaluation builds value-initialised pages for about
  /// two thirds of what writing the elements costs.
  constexpr void assign_zeros(size_type n) {
    delete[] pages_;
    const size_type count = (n + page_size - 1) / page_size;
    pages_ = new page[count]();
    size_ = n;
    cap_ = count * page_size;
  }
  constexpr void push_back(const T& v) {
    if (size_ == cap_) reserve(cap_ < page_size ? page_size : 2 * cap_);
    (*this)[size_++] = v;
  }

  constexpr size_type size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T& operator[](size_type i) noexcept { return pages_[i >> page_shift].v[i & page_mask]; }
  constexpr const T& operator[](size_type i) const noexcept {
    return pages_[i >> page_shift].v[i & page_mask];
  }
  constexpr page* pages() noexcept { return pages_; }
  constexpr const page* pages() const noexcept { return pages_; }
  constexpr T& back() noexcept { return (*this)[size_ - 1]; }
  constexpr const T& back() const noexcept { return (*this)[size_ - 1]; }
  constexpr T& front() noexcept { return (*this)[0]; }
  constexpr const T& front() const noexcept { return (*this)[0]; }

  friend constexpr bool operator==(const paged& a, const paged& b) {
    if (a.size_ != b.size_) return false;
    for (size_type i = 0; i < a.size_; ++i)
      if (!(a[i] == b[i])) return false;
    return true;
  }

 private:
  page* pages_ = nullptr;
  size_type size_ = 0;
  size_type cap_ = 0;
};

}  // namespace weft
