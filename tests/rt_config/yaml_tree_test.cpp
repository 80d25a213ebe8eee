// The loader's flat YAML document against yaml-cpp's node tree, the independent reference: the same types,
// scalars, marks, sizes, order, lookups and exceptions on every node of a set of documents, and the size per node
// that docs/benchmarks.md's memory figure rests on.
#include "rt_config/yaml_tree.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace {

using rtcosim::config::yaml::Document;
using Flat = rtcosim::config::yaml::Node;

// What a read of a node throws or gives, as text, so that both trees are compared through the same lens.
template <typename Read>
std::string outcome(Read read) {
  try {
    return "ok:" + read();
  } catch (const YAML::Exception& e) {
    return "throws:" + std::string(e.what());
  }
}

void same(const YAML::Node& ref, const Flat& flat, const std::string& path, int depth = 0) {
  SCOPED_TRACE(path);
  ASSERT_LT(depth, 32) << "a cycle through an alias";
  ASSERT_EQ(static_cast<bool>(ref), static_cast<bool>(flat));
  EXPECT_EQ(outcome([&] { return std::to_string(static_cast<int>(ref.Type())); }),
            outcome([&] { return std::to_string(static_cast<int>(flat.Type())); }));
  EXPECT_EQ(outcome([&] { return ref.Scalar(); }), outcome([&] { return flat.Scalar(); }));
  EXPECT_EQ(outcome([&] { return std::to_string(ref.size()); }), outcome([&] { return std::to_string(flat.size()); }));
  EXPECT_EQ(outcome([&] {
              const auto m = ref.Mark();
              return std::to_string(m.line) + ":" + std::to_string(m.column);
            }),
            outcome([&] {
              const auto m = flat.Mark();
              return std::to_string(m.line) + ":" + std::to_string(m.column);
            }));
  EXPECT_EQ(outcome([&] { return std::to_string(ref.as<double>(-7.5)); }),
            outcome([&] { return std::to_string(flat.as<double>(-7.5)); }));
  EXPECT_EQ(outcome([&] { return std::to_string(ref.as<double>()); }),
            outcome([&] { return std::to_string(flat.as<double>()); }));
  // Lookups of a key that is there, one that is not, and an index: the found node, a zombie, or a throw.
  for (const std::string key : {"a", "name", "missing"}) {
    std::string ref_got, flat_got;
    const std::string r = outcome([&] {
      const YAML::Node n = ref[key];
      ref_got = n ? n.Scalar() : "<none>";
      return ref_got + "/" + outcome([&] { return n.Scalar(); });
    });
    const std::string f = outcome([&] {
      const Flat n = flat[key];
      flat_got = n ? n.Scalar() : "<none>";
      return flat_got + "/" + outcome([&] { return n.Scalar(); });
    });
    EXPECT_EQ(r, f) << "key " << key;
  }
  EXPECT_EQ(outcome([&] { return ref[0] ? ref[0].Scalar() : std::string("<none>"); }),
            outcome([&] { return flat[0] ? flat[0].Scalar() : std::string("<none>"); }));
  if (!ref) return;
  if (ref.IsSequence()) {
    std::size_t i = 0;
    auto f = flat.begin();
    for (auto r = ref.begin(); r != ref.end(); ++r, ++f, ++i) {
      ASSERT_FALSE(f == flat.end());
      EXPECT_EQ(outcome([&] { return r->first.Scalar(); }), outcome([&] { return f->first.Scalar(); }));
      same(*r, *f, path + "[" + std::to_string(i) + "]", depth + 1);
    }
    EXPECT_TRUE(f == flat.end());
  } else if (ref.IsMap()) {
    auto f = flat.begin();
    for (auto r = ref.begin(); r != ref.end(); ++r, ++f) {
      ASSERT_FALSE(f == flat.end());
      EXPECT_EQ(outcome([&] { return std::to_string(static_cast<int>(r->Type())); }),
                outcome([&] { return std::to_string(static_cast<int>(f->Type())); }));
      same(r->first, f->first, path + ".<key>", depth + 1);
      same(r->second, f->second, path + "." + (r->first.IsScalar() ? r->first.Scalar() : "?"), depth + 1);
    }
    EXPECT_TRUE(f == flat.end());
  }
}

void same_document(const std::string& text) {
  SCOPED_TRACE(text);
  const YAML::Node ref = YAML::Load(text);
  const Document doc(text);
  same(ref, doc.root(), "root");
}

TEST(YamlTree, EveryNodeReadsAsYamlCppReadsIt) {
  const std::vector<std::string> documents = {
      "",
      "# only a comment\n",
      "~\n",
      "just a scalar\n",
      "name: g\nduration: 5s\ntasks:\n  - {name: t0, period: 1ms, cpu: 0}\n  - name: t1\n    period: 2ms\n",
      "a: 1\na: 2\nb: [1, 2.5, .inf, -.inf, .nan, 0x1F, 1e3, abc, '', ~, null, true]\n",
      "a: &x {name: shared, k: [1, 2]}\nb: *x\nc: [*x, *x]\n",
      "? [complex, key]\n: value\n? {m: 1}\n: other\nplain: v\n",
      "a:\nb: ~\nc: null\nd: ''\ne: \"\"\nf: |\n  line one\n  line two\ng: >\n  folded\n  text\n",
      "- [[1, 2], [3, 4]]\n- []\n- {}\n- - - deep\n",
      "first: 1\n---\nsecond: 2\n",
      "a: !!str 12\nb: !custom {x: 1}\nc: \"quoted: colon\"\nname: \"\\u00e9t\\u00e9\"\n",
      "wires:\n  - {from: a.y, to: b.u}\n  - from: b.y\n    to: c.u\n    coupling: {method: predictor, order: 2}\n",
  };
  for (const auto& text : documents) same_document(text);
}

TEST(YamlTree, ParseErrorsAreYamlCppsWithTheirPlace) {
  for (const std::string text : {"a: [1, 2\n", "a: {b: 1\n", "a: b: c\n", "a: *nowhere\n"}) {
    SCOPED_TRACE(text);
    std::string ref, flat;
    try {
      (void)YAML::Load(text);
    } catch (const YAML::Exception& e) {
      ref = e.what();
    }
    try {
      const Document doc(text);
    } catch (const YAML::Exception& e) {
      flat = e.what();
    }
    EXPECT_FALSE(ref.empty());
    EXPECT_EQ(ref, flat);
  }
}

// The figure behind the loader's memory: an entry per node, the scalars' bytes once, 4 bytes per child. For the
// shape of bench/scale_graph.py's lines (13 nodes per block, 5 per wire) that is under 36 bytes per node with
// every buffer; yaml-cpp's tree took about 300, plus one node per lookup.
TEST(YamlTree, ABlockLineCostsItsEntriesAndItsText) {
  std::string text = "blocks:\n";
  const int n = 1000;
  for (int i = 0; i < n; ++i) {
    text += "  - {name: b" + std::to_string(i) + ", type: first_order_lag, task: t0, params: {time_constant: 0.05}}\n";
  }
  const Document doc(text);
  const std::size_t nodes = 1 + 2 + static_cast<std::size_t>(n) * 11;  // root, key, list; per block 11
  const auto blocks = doc.root()["blocks"];
  ASSERT_EQ(blocks.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(blocks[999]["params"]["time_constant"].as<double>(), 0.05);
  EXPECT_EQ(blocks[999].Mark().line, 1000);
  EXPECT_LE(doc.bytes(), nodes * 36) << doc.bytes() << " bytes for " << nodes << " nodes";
  EXPECT_GE(doc.bytes(), nodes * 20) << "an entry is 20 bytes: the count above is wrong";
}

}  // namespace
