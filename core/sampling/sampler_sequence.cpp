// The --samplers list: llama.cpp's canonical names and the aliases its common/ accepts.
#include <algorithm>
#include <cctype>
#include <map>

#include "sampling/sampler.h"
#include "util/error.h"

namespace wb {

std::vector<std::string> default_sampler_sequence() {
    return {"penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"};
}

static const std::map<std::string, std::string>& sampler_aliases() {
    static const std::map<std::string, std::string> aliases = [] {
        std::map<std::string, std::string> out;
        for (const std::string& name : default_sampler_sequence()) {
            out[name] = name;
            std::string kebab = name;
            std::replace(kebab.begin(), kebab.end(), '_', '-');
            out[kebab] = name;
            std::string joined = name;
            std::erase(joined, '_');
            out[joined] = name;
        }
        out["nucleus"] = "top_p";
        out["temp"] = "temperature";
        out["typ"] = "typ_p";
        out["typical"] = "typ_p";
        out["typical_p"] = "typ_p";
        return out;
    }();
    return aliases;
}

std::vector<std::string> parse_sampler_sequence(const std::string& list) {
    std::vector<std::string> out;
    std::string name;
    auto flush = [&] {
        std::string lower;
        for (char ch : name) {
            if (!std::isspace(static_cast<unsigned char>(ch))) lower += char(std::tolower(static_cast<unsigned char>(ch)));
        }
        name.clear();
        if (lower.empty()) return;
        auto it = sampler_aliases().find(lower);
        if (it == sampler_aliases().end()) {
            throw Error("unknown sampler '" + lower + "' in the sampler order (known: " +
                        join_sampler_sequence(default_sampler_sequence()) + ")");
        }
        out.push_back(it->second);
    };
    for (char ch : list) {
        if (ch == ';' || ch == ',') {
            flush();
        } else {
            name += ch;
        }
    }
    flush();
    return out;
}

std::string join_sampler_sequence(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ";") + n;
    return out;
}

}  // namespace wb
