// RecordList: the records of a batch, as views of the loader's pooled blocks
// (record_pool.h) rather than strings of their own.
//
//   for (std::string_view record : batch.records) Train(record);
//   std::vector<std::string> owned = batch.records.CopyOut();  // when strings are wanted
//
// Ownership and lifetime: the list holds a reference to each record's block,
// so its views stay valid as long as the list (or a PooledRecord taken from
// it) lives -- after the loader is closed or destroyed too. Dropping the
// list returns the blocks to the loader's pool. The bytes are read-only.
//
// Threading: like a std::vector (concurrent reads are fine); dropping
// references from any thread is safe.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/records/record_pool.h"

namespace spool::loader {

// The pool's types are the loader's too: its batches hand them out.
using records::BlockRef;
using records::BlockWriter;
using records::PooledRecord;
using records::RecordPool;
using records::RecordPoolStats;

class RecordList {
 public:
  // Iterates over the records as std::string_view.
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = std::string_view;

    const_iterator() = default;
    explicit const_iterator(std::vector<PooledRecord>::const_iterator at) : at_(at) {}
    std::string_view operator*() const { return at_->bytes; }
    const std::string_view* operator->() const { return &at_->bytes; }
    std::string_view operator[](difference_type n) const { return at_[n].bytes; }
    const_iterator& operator++() { return ++at_, *this; }
    const_iterator operator++(int) { return const_iterator(at_++); }
    const_iterator& operator--() { return --at_, *this; }
    const_iterator operator--(int) { return const_iterator(at_--); }
    const_iterator& operator+=(difference_type n) { return at_ += n, *this; }
    const_iterator& operator-=(difference_type n) { return at_ -= n, *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const_iterator a, const_iterator b) { return a.at_ - b.at_; }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.at_ == b.at_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.at_ <=> b.at_; }

   private:
    std::vector<PooledRecord>::const_iterator at_;
  };
  using iterator = const_iterator;
  using value_type = std::string_view;
  using size_type = size_t;

  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  std::string_view operator[](size_t i) const { return records_[i].bytes; }
  const_iterator begin() const { return const_iterator(records_.begin()); }
  const_iterator end() const { return const_iterator(records_.end()); }

  // Record i with the reference that keeps it valid: what a caller keeps to
  // hold one record beyond the list (the Python bindings do).
  const PooledRecord& ref(size_t i) const { return records_[i]; }
  // Owned copies, for callers that want strings.
  std::vector<std::string> CopyOut() const {
    std::vector<std::string> out;
    out.reserve(records_.size());
    for (const PooledRecord& record : records_) out.emplace_back(record.bytes);
    return out;
  }

  void reserve(size_t n) { records_.reserve(n); }
  void push_back(PooledRecord record) { records_.push_back(std::move(record)); }
  // Moves `other`'s records to the end of this list.
  void Append(RecordList&& other) {
    records_.insert(records_.end(), std::make_move_iterator(other.records_.begin()),
                    std::make_move_iterator(other.records_.end()));
    other.records_.clear();
  }
  void clear() { records_.clear(); }

 private:
  std::vector<PooledRecord> records_;
};

}  // namespace spool::loader
