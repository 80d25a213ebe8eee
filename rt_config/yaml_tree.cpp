#include "rt_config/yaml_tree.hpp"

#include <limits>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/node/convert.h>
#include <yaml-cpp/node/impl.h>
#include <yaml-cpp/node/node.h>
#include <yaml-cpp/parser.h>

namespace rtcosim::config::yaml {

// Receives yaml-cpp's parse events and lays the nodes out as NodeBuilder links them: a container's entry when it
// opens, its children's indices when it closes (so that they lie together in kids_), an alias as the index of
// its anchored node.
class Builder final : public YAML::EventHandler {
 public:
  explicit Builder(Document& doc) : doc_(doc) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { done(add(mark, YAML::NodeType::Null, anchor)); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    if (anchor >= anchors_.size()) throw std::runtime_error("an alias names an anchor the parser never gave");
    done(anchors_[anchor]);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    const std::uint32_t i = add(mark, YAML::NodeType::Scalar, anchor);
    auto& e = doc_.entries_[i];
    e.first = checked(doc_.text_.size());
    e.count = checked(value.size());
    doc_.text_ += value;
    done(i);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(add(mark, YAML::NodeType::Sequence, anchor));
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(add(mark, YAML::NodeType::Map, anchor));
  }
  void OnMapEnd() override { close(); }

 private:
  // Indices are 32 bits: a file is refused far below 4 GiB (LoadOptions::max_file_bytes).
  static std::uint32_t checked(std::size_t n) {
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("YAML document over 4 GiB");
    return static_cast<std::uint32_t>(n);
  }
  std::uint32_t add(const YAML::Mark& mark, YAML::NodeType::value type, YAML::anchor_t anchor) {
    const std::uint32_t i = checked(doc_.entries_.size());
    Document::Entry e;
    e.line = mark.line;
    e.column = mark.column;
    e.type = static_cast<std::uint8_t>(type);
    doc_.entries_.push_back(e);
    if (anchor != 0) {
      if (anchor >= anchors_.size()) anchors_.resize(anchor + 1, 0);
      anchors_[anchor] = i;
    }
    return i;
  }
  void done(std::uint32_t i) {
    if (depth_ == 0) {
      doc_.root_ = i;
      doc_.empty_ = false;
      return;
    }
    open_[depth_ - 1].kids.push_back(i);
  }
  void open(std::uint32_t i) {
    // The frames' vectors are kept between containers, so that a file of many small mappings reuses them.
    if (depth_ == open_.size()) open_.emplace_back();
    open_[depth_].entry = i;
    open_[depth_].kids.clear();
    ++depth_;
  }
  void close() {
    Frame& f = open_[--depth_];
    auto& e = doc_.entries_[f.entry];
    e.first = checked(doc_.kids_.size());
    e.count = checked(f.kids.size());
    doc_.kids_.insert(doc_.kids_.end(), f.kids.begin(), f.kids.end());
    done(f.entry);
  }

  struct Frame {
    std::uint32_t entry = 0;
    std::vector<std::uint32_t> kids;
  };
  Document& doc_;
  std::vector<Frame> open_;
  std::size_t depth_ = 0;
  std::vector<std::uint32_t> anchors_;
};

Document::Document(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  Builder builder(*this);
  parser.HandleNextDocument(builder);
  entries_.shrink_to_fit();
  kids_.shrink_to_fit();
  text_.shrink_to_fit();
}

std::size_t Document::bytes() const noexcept {
  return entries_.capacity() * sizeof(Entry) + kids_.capacity() * sizeof(std::uint32_t) + text_.capacity();
}

YAML::NodeType::value Node::Type() const {
  ensure_valid();
  return doc_ ? static_cast<YAML::NodeType::value>(doc_->entries_[index_].type) : YAML::NodeType::Null;
}

YAML::Mark Node::Mark() const {
  ensure_valid();
  if (!doc_) return YAML::Mark::null_mark();
  YAML::Mark m;
  m.line = doc_->entries_[index_].line;
  m.column = doc_->entries_[index_].column;
  return m;
}

std::string Node::Scalar() const {
  ensure_valid();
  if (!doc_) return {};
  const auto& e = doc_->entries_[index_];
  if (e.type != YAML::NodeType::Scalar) return {};
  return doc_->text_.substr(e.first, e.count);
}

std::size_t Node::size() const {
  ensure_valid();
  if (!doc_) return 0;
  const auto& e = doc_->entries_[index_];
  switch (e.type) {
    case YAML::NodeType::Sequence:
      return e.count;
    case YAML::NodeType::Map:
      return e.count / 2;
    default:
      return 0;
  }
}

Node Node::operator[](std::string_view key) const {
  ensure_valid();
  if (!doc_) return zombie(key);
  const auto& e = doc_->entries_[index_];
  if (e.type == YAML::NodeType::Scalar) throw YAML::BadSubscript(Mark(), std::string(key));
  if (e.type != YAML::NodeType::Map) return zombie(key);
  for (std::uint32_t k = e.first; k < e.first + e.count; k += 2) {
    const auto& key_entry = doc_->entries_[doc_->kids_[k]];
    if (key_entry.type != YAML::NodeType::Scalar) continue;
    if (std::string_view(doc_->text_).substr(key_entry.first, key_entry.count) == key) {
      return Node(doc_, doc_->kids_[k + 1]);
    }
  }
  return zombie(key);
}

Node Node::operator[](std::size_t index) const {
  ensure_valid();
  if (!doc_) return zombie(std::to_string(index));
  const auto& e = doc_->entries_[index_];
  if (e.type == YAML::NodeType::Scalar) throw YAML::BadSubscript(Mark(), index);
  if (e.type != YAML::NodeType::Sequence || index >= e.count) return zombie(std::to_string(index));
  return Node(doc_, doc_->kids_[e.first + index]);
}

Node::Iterator Node::begin() const {
  if (!valid_ || !doc_) return {};
  const auto& e = doc_->entries_[index_];
  if (e.type != YAML::NodeType::Sequence && e.type != YAML::NodeType::Map) return {};
  return Iterator(doc_, doc_->kids_.data() + e.first, e.type == YAML::NodeType::Map);
}

Node::Iterator Node::end() const {
  if (!valid_ || !doc_) return {};
  const auto& e = doc_->entries_[index_];
  if (e.type != YAML::NodeType::Sequence && e.type != YAML::NodeType::Map) return {};
  return Iterator(doc_, doc_->kids_.data() + e.first + e.count, e.type == YAML::NodeType::Map);
}

void Node::Iterator::load() const {
  if (map_) {
    static_cast<Node&>(item_) = Node::zombie({});
    item_.first = Node(doc_, at_[0]);
    item_.second = Node(doc_, at_[1]);
  } else {
    static_cast<Node&>(item_) = Node(doc_, at_[0]);
  }
}

bool decode(const Node& node, double& out) {
  if (node.Type() != YAML::NodeType::Scalar) return false;
  return YAML::convert<double>::decode(YAML::Node(node.Scalar()), out);
}

template <>
double Node::as<double>() const {
  ensure_valid();
  double x = 0.0;
  if (doc_ && decode(*this, x)) return x;
  throw YAML::TypedBadConversion<double>(Mark());
}

template <>
double Node::as<double>(double fallback) const {
  if (!valid_ || !doc_) return fallback;
  double x = 0.0;
  return decode(*this, x) ? x : fallback;
}

}  // namespace rtcosim::config::yaml
