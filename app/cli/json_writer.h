#pragma once
// A minimal streaming JSON writer for the CLI's --json output (no dependency needed for this much).
// Strings are written as valid JSON whatever bytes they hold: invalid UTF-8 becomes U+FFFD.
#include <cstdint>
#include <string>
#include <vector>

namespace wb::cli {

class JsonWriter {
public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(const std::string& k);
    JsonWriter& value(const std::string& s);
    JsonWriter& value(const char* s) { return value(std::string(s)); }
    JsonWriter& value(double d);
    JsonWriter& value(int64_t i);
    JsonWriter& value(int32_t i) { return value(int64_t(i)); }
    JsonWriter& value(uint64_t i);
    JsonWriter& value(bool b);
    JsonWriter& null();
    template <typename T>
    JsonWriter& array(const std::vector<T>& items) {
        begin_array();
        for (const auto& it : items) value(it);
        return end_array();
    }
    const std::string& str() const { return out_; }

private:
    void separator();
    std::string out_;
    std::vector<bool> first_;  // per open container: no element written yet
    bool after_key_ = false;
};

// s with invalid UTF-8 sequences replaced by U+FFFD, escaped as a JSON string literal (with quotes).
std::string json_quote(const std::string& s);

}  // namespace wb::cli
