#include "workloads/importers/json_stream.hpp"

#include <array>
#include <fstream>
#include <istream>
#include <streambuf>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <zlib.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"

namespace commstack::workloads::importers {
namespace {

// A read-only streambuf over zlib's gzFile: gzread passes plain files through unchanged, so one
// reader serves both .json and .json.gz.
class GzBuf : public std::streambuf {
public:
  explicit GzBuf(const std::string& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_ != nullptr) gzbuffer(file_, 1 << 17);
  }
  ~GzBuf() override {
    if (file_ != nullptr) gzclose(file_);
  }
  GzBuf(const GzBuf&) = delete;
  GzBuf& operator=(const GzBuf&) = delete;
  bool ok() const { return file_ != nullptr; }
  const std::string& error() const { return error_; }
  std::int64_t consumed() const { return consumed_; }

protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (file_ == nullptr || !error_.empty()) return traits_type::eof();
    const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(file_, &code);
      error_ = msg != nullptr ? msg : "read error";
      return traits_type::eof();
    }
    if (n == 0) {
      // The end, or a compressed stream cut short: zlib then returns 0 and reports Z_BUF_ERROR
      // ("unexpected end of file") through gzerror, not a negative count.
      int code = Z_OK;
      const char* msg = gzerror(file_, &code);
      if (code != Z_OK) error_ = msg != nullptr && *msg != '\0' ? msg : "unexpected end of file";
      return traits_type::eof();
    }
    consumed_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

private:
  gzFile file_ = nullptr;
  std::array<char, 1 << 17> buf_{};
  std::string error_;
  std::int64_t consumed_ = 0;
};

using json = nlohmann::json;

// SAX handler: builds values with a small stack of open containers; at depth 1 (members of the
// top-level object) it decides whether a value is streamed element by element or kept whole.
class Handler : public nlohmann::json_sax<json> {
public:
  Handler(std::string array_key, const StreamCallbacks& cb) : array_key_(std::move(array_key)), cb_(cb) {}

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return value(json(v)); }
  bool string(string_t& v) override { return value(json(std::move(v))); }
  bool binary(binary_t& v) override { return value(json::binary(std::move(v))); }

  bool start_object(std::size_t /*n*/) override {
    if (too_deep()) return false;
    push_scope(true);
    if (depth_ == 0) {
      ++depth_;
      top_is_object_ = true;
      return true;
    }
    open(json::object());
    return true;
  }
  bool end_object() override {
    scopes_.pop_back();
    return close();
  }
  bool start_array(std::size_t /*n*/) override {
    if (too_deep()) return false;
    push_scope(false);
    if (depth_ == 0) {
      error_ = "the top level is an array; expected an object with a \"" + array_key_ + "\" array";
      return false;
    }
    if (depth_ == 1 && key_ == array_key_) {  // the streamed array: its elements are roots
      ++depth_;
      streaming_ = true;
      return true;
    }
    open(json::array());
    return true;
  }
  bool end_array() override {
    scopes_.pop_back();
    return close();
  }
  bool key(string_t& k) override {
    // Every JSON input refuses a key written twice in one object (docs/cli.md), as
    // parse_input_json does: JSON would keep only the last one.
    if (!scopes_.back().keys.insert(k).second) {
      std::string at;
      for (std::size_t i = 1; i < scopes_.size(); ++i) at += scopes_[i].segment;
      duplicate_key_ =
          fmt::format("key \"{}\" appears twice in {}; JSON keeps only the last one, so remove the other", k,
                      at.empty() ? "the top-level object" : "the object at " + at);
      return false;
    }
    last_key_ = k;
    if (stack_.empty()) key_ = k;
    else pending_key_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/, const nlohmann::detail::exception& ex) override {
    position_ = position;
    error_ = ex.what();
    return false;
  }

  std::int64_t elements() const { return elements_; }
  bool nested_too_deep() const { return too_deep_; }
  // The top-level member being read when the parse stopped ("" before the first key).
  const std::string& member() const { return key_; }
  bool in_streamed_array() const { return streaming_; }
  std::size_t position() const { return position_; }
  const std::string& error() const { return error_; }
  bool saw_object() const { return top_is_object_; }
  // Set when a key appears twice in one object: says which key and where.
  const std::string& duplicate_key() const { return duplicate_key_; }

 private:
  // One open object or array, for the duplicate-key check and its message.
  struct Scope {
    bool object = false;
    std::string segment;  // "/key" in a parent object, "[i]" in the streamed array, "/*" in another array
    std::unordered_set<std::string> keys;
  };
  void push_scope(bool object) {
    std::string segment;
    if (!scopes_.empty()) {
      if (scopes_.back().object)
        segment = "/" + last_key_;
      else if (streaming_ && scopes_.size() == 2)
        segment = fmt::format("[{}]", elements_);
      else
        segment = "/*";
    }
    scopes_.push_back({.object = object, .segment = std::move(segment), .keys = {}});
  }

  // Every JSON input refuses nesting deeper than kMaxJsonDepth (docs/cli.md), as
  // parse_input_json does: the values built here are copied and destroyed recursively later,
  // once per level, so a few hundred KB of '[' would overflow the stack. Called before a
  // container opens, with depth_ the number of containers already open.
  bool too_deep() {
    if (depth_ <= kMaxJsonDepth) return false;
    too_deep_ = true;
    return true;
  }
  bool value(json&& v) {
    if (depth_ == 0) {
      error_ = "the top level is not an object";
      return false;
    }
    if (stack_.empty()) return deliver(std::move(v));
    json& top = *stack_.back();
    if (top.is_array()) top.push_back(std::move(v));
    else top[pending_key_] = std::move(v);
    return true;
  }
  void open(json&& container) {
    if (stack_.empty()) {
      root_ = std::move(container);
      stack_.push_back(&root_);
      ++depth_;
      return;
    }
    json& top = *stack_.back();
    json* child = nullptr;
    if (top.is_array()) {
      top.push_back(std::move(container));
      child = &top.back();
    } else {
      child = &(top[pending_key_] = std::move(container));
    }
    stack_.push_back(child);
    ++depth_;
  }
  bool close() {
    --depth_;
    if (stack_.empty()) {  // end of the streamed array or of the top-level object
      if (streaming_ && depth_ == 1) streaming_ = false;
      return true;
    }
    stack_.pop_back();
    if (stack_.empty()) return deliver(std::move(root_));
    return true;
  }
  bool deliver(json&& v) {
    if (streaming_) {
      if (cb_.element) cb_.element(std::move(v), elements_);
      ++elements_;
    } else if (cb_.member) {
      cb_.member(key_, std::move(v));
    }
    root_ = json();
    return true;
  }

  std::string array_key_;
  const StreamCallbacks& cb_;
  std::vector<json*> stack_;
  json root_;
  std::string key_, pending_key_, last_key_;
  std::vector<Scope> scopes_;
  std::string duplicate_key_;
  int depth_ = 0;
  bool streaming_ = false;
  bool top_is_object_ = false;
  bool too_deep_ = false;
  std::int64_t elements_ = 0;
  std::size_t position_ = 0;
  std::string error_;
};

}  // namespace

bool is_gzip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::int64_t stream_json_file(const std::string& path, const std::string& array_key, const StreamCallbacks& cb) {
  check_input_file(path, "trace");
  GzBuf buf(path);
  if (!buf.ok()) throw InputError(fmt::format("{}: cannot open the file", path));
  std::istream in(&buf);
  Handler h(array_key, cb);
  bool ok = false;
  try {
    ok = json::sax_parse(in, &h, json::input_format_t::json, true);
  } catch (const InputError& e) {
    // A callback rejected an element: say which one.
    throw InputError(fmt::format("{}: \"{}\"[{}]: {}", path, array_key, h.elements(), e.what()));
  }
  if (h.nested_too_deep()) {
    throw InputError(
        fmt::format("{}: JSON nested more than {} levels deep in {}; expected a trace of a few levels", path,
                    kMaxJsonDepth,
                    h.in_streamed_array() ? fmt::format("\"{}\"[{}]", array_key, h.elements())
                                          : fmt::format("\"{}\"", h.member())));
  }
  if (!h.duplicate_key().empty()) throw InputError(fmt::format("{}: {}", path, h.duplicate_key()));
  if (!buf.error().empty()) {
    throw InputError(fmt::format("{}: the compressed file is corrupt or truncated after {} bytes ({}), in \"{}\" element {}",
                                 path, buf.consumed(), buf.error(), array_key, h.elements()));
  }
  if (!ok) {
    std::string what = h.error();
    if (auto p = what.find("] "); p != std::string::npos && what.rfind("[json.exception", 0) == 0) what = what.substr(p + 2);
    throw InputError(fmt::format("{}: invalid JSON at byte {} (while reading \"{}\" element {}): {}", path,
                                 h.position(), array_key, h.elements(), what.empty() ? "the file ends early" : what));
  }
  if (!h.saw_object()) throw InputError(fmt::format("{}: expected a JSON object with a \"{}\" array", path, array_key));
  return h.elements();
}

}  // namespace commstack::workloads::importers
