// A read-only YAML document in flat arrays, built from yaml-cpp's event parser. Internal to rtcosim_config: the
// loader reads a task graph through it; nothing outside rt_config/ includes it.
//
// Why not YAML::Load: yaml-cpp's node tree costs about 300 bytes per node, and every `node["key"]` on a const
// node allocates one more node for the key that lives as long as the tree (yaml-cpp 0.7's const lookup converts
// the key to a node). A task graph of 10^4 signals made 10^6 such nodes, 67 MB: half the peak memory of
// `rtcosim check`. Here a node is one 20-byte entry, scalars share one text buffer, and a lookup allocates nothing
// (docs/benchmarks.md, "Scale").
//
// `Node` mirrors the part of YAML::Node's const interface the loader uses, with yaml-cpp 0.7's semantics, so that
// every diagnostic keeps its text and its file:line:column: a missing key gives a node that tests false and
// throws YAML::InvalidNode when read; a scalar subscripted throws YAML::BadSubscript; a map and a sequence
// iterate as yaml-cpp's do (`it->first`/`it->second` for a map, the element for a sequence); an alias is the
// anchored node itself; `as<double>` converts as yaml-cpp does.
//
// Ownership: a Node points into its Document and must not outlive it. Not real-time code: it allocates and
// throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/type.h>

namespace rtcosim::config::yaml {

class Document;

class Node {
 public:
  // A valid null node, as YAML::Node() is.
  Node() = default;

  [[nodiscard]] bool IsDefined() const noexcept { return valid_; }
  explicit operator bool() const noexcept { return valid_; }

  [[nodiscard]] YAML::NodeType::value Type() const;
  [[nodiscard]] bool IsNull() const { return Type() == YAML::NodeType::Null; }
  [[nodiscard]] bool IsScalar() const { return Type() == YAML::NodeType::Scalar; }
  [[nodiscard]] bool IsSequence() const { return Type() == YAML::NodeType::Sequence; }
  [[nodiscard]] bool IsMap() const { return Type() == YAML::NodeType::Map; }

  [[nodiscard]] YAML::Mark Mark() const;
  // The scalar's text; empty for any other node.
  [[nodiscard]] std::string Scalar() const;
  // Elements of a sequence, pairs of a map, 0 otherwise.
  [[nodiscard]] std::size_t size() const;

  // The first value whose key is the scalar `key` (yaml-cpp keeps a repeated key and finds the first).
  Node operator[](std::string_view key) const;
  Node operator[](const std::string& key) const { return (*this)[std::string_view(key)]; }
  Node operator[](const char* key) const { return (*this)[std::string_view(key)]; }
  // A sequence's element.
  Node operator[](std::size_t index) const;
  Node operator[](int index) const { return (*this)[static_cast<std::size_t>(index)]; }

  // yaml-cpp's conversion of the scalar to a double: throws YAML::TypedBadConversion when it fails.
  template <typename T>
  [[nodiscard]] T as() const;
  template <typename T>
  [[nodiscard]] T as(T fallback) const;

  // One element of an iteration: the element itself in a sequence; `first` and `second` in a map.
  struct Item;
  class Iterator;
  [[nodiscard]] Iterator begin() const;
  [[nodiscard]] Iterator end() const;

 private:
  friend class Document;
  Node(const Document* doc, std::uint32_t index) noexcept : doc_(doc), index_(index) {}
  static Node zombie(std::string_view key) {
    Node n;
    n.valid_ = false;
    n.invalid_key_ = key;
    return n;
  }
  void ensure_valid() const {
    if (!valid_) throw YAML::InvalidNode(invalid_key_);
  }

  const Document* doc_ = nullptr;  // null: the document's empty root or a zombie
  std::uint32_t index_ = 0;
  bool valid_ = true;
  std::string invalid_key_;  // the key a zombie was looked up with, for YAML::InvalidNode's message
};

struct Node::Item : Node {
  Node first = Node::zombie({});
  Node second = Node::zombie({});
};

class Node::Iterator {
 public:
  using value_type = Item;
  using difference_type = std::ptrdiff_t;
  using reference = const Item&;
  using pointer = const Item*;
  using iterator_category = std::forward_iterator_tag;

  Iterator() = default;
  reference operator*() const {
    load();
    return item_;
  }
  pointer operator->() const {
    load();
    return &item_;
  }
  Iterator& operator++() noexcept {
    at_ += map_ ? 2 : 1;
    return *this;
  }
  bool operator==(const Iterator& other) const noexcept { return at_ == other.at_; }

 private:
  friend class Node;
  Iterator(const Document* doc, const std::uint32_t* at, bool map) noexcept : doc_(doc), at_(at), map_(map) {}
  void load() const;

  const Document* doc_ = nullptr;
  const std::uint32_t* at_ = nullptr;
  bool map_ = false;
  mutable Item item_;
};

// The parsed first document of a YAML text. Throws what yaml-cpp's parser throws (YAML::ParserException,
// YAML::DeepRecursion) with the place of the fault.
class Document {
 public:
  explicit Document(std::string_view text);
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;

  // The document's root; a null node when the text holds no document.
  [[nodiscard]] Node root() const noexcept { return empty_ ? Node() : Node(this, root_); }
  // Bytes the document holds: what yaml_tree_test holds its size per node to.
  [[nodiscard]] std::size_t bytes() const noexcept;

 private:
  friend class Node;
  friend class Builder;
  struct Entry {
    std::uint32_t first = 0;  // a scalar's offset in text_; a container's first child in kids_
    std::uint32_t count = 0;  // a scalar's length; a container's children (2 per pair of a map)
    std::int32_t line = 0;    // yaml-cpp's mark, 0-based
    std::int32_t column = 0;
    std::uint8_t type = YAML::NodeType::Null;
  };
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> kids_;
  std::string text_;
  std::uint32_t root_ = 0;
  bool empty_ = true;
};

// yaml-cpp's conversion of a scalar node to double (convert<double>::decode): false when the node is no number.
bool decode(const Node& node, double& out);

template <>
double Node::as<double>() const;
template <>
double Node::as<double>(double fallback) const;

}  // namespace rtcosim::config::yaml
