#include "unicode.h"

#include <algorithm>
#include <array>

namespace wb::unicode {
namespace {

struct CptRange {
    uint32_t first;
    uint32_t last;
    uint8_t flags;
};

#include "unicode_tables.inc"

uint8_t range_lookup(const CptRange* begin, const CptRange* end, uint32_t cpt) {
    const CptRange* it = std::upper_bound(begin, end, cpt,
                                          [](uint32_t c, const CptRange& r) { return c < r.first; });
    if (it == begin) return 0;
    --it;
    return cpt <= it->last ? it->flags : 0;
}

// ASCII is most of what tokenizers see; a table avoids two binary searches per character.
const std::array<uint8_t, 128>& ascii_flags() {
    static const std::array<uint8_t, 128> table = [] {
        std::array<uint8_t, 128> t{};
        for (uint32_t c = 0; c < 128; ++c) {
            t[c] = uint8_t(range_lookup(std::begin(k_class_ranges), std::end(k_class_ranges), c) |
                           range_lookup(std::begin(k_whitespace_ranges), std::end(k_whitespace_ranges), c));
        }
        return t;
    }();
    return table;
}

struct ByteMap {
    std::array<std::string, 256> to_utf8;
    std::array<int16_t, 324> from_cpt;  // mapped code points are all < 256 + 68
};

// Printable bytes keep their value; the 68 others (controls, space, 0x7F..0xA0, 0xAD) are moved, in
// byte order, to U+0100 onwards, so every byte has a visible, non-whitespace stand-in.
const ByteMap& byte_map() {
    static const ByteMap map = [] {
        ByteMap m;
        m.from_cpt.fill(-1);
        uint32_t next_free = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const uint32_t cpt = printable ? b : next_free++;
            append_utf8(m.to_utf8[b], cpt);
            m.from_cpt[cpt] = int16_t(b);
        }
        return m;
    }();
    return map;
}

}  // namespace

uint8_t cpt_flags(uint32_t cpt) {
    if (cpt < 128) return ascii_flags()[cpt];
    return uint8_t(range_lookup(std::begin(k_class_ranges), std::end(k_class_ranges), cpt) |
                   range_lookup(std::begin(k_whitespace_ranges), std::end(k_whitespace_ranges), cpt));
}

uint32_t decode_lenient(std::string_view s, size_t& pos) {
    const auto byte = [&](size_t i) { return uint8_t(s[i]); };
    const uint8_t lead = byte(pos);
    size_t len = 0;
    uint32_t cpt = 0;
    if (lead < 0x80) {
        pos += 1;
        return lead;
    } else if ((lead & 0xE0) == 0xC0) {
        len = 2, cpt = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        len = 3, cpt = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        len = 4, cpt = lead & 0x07;
    } else {
        pos += 1;
        return REPLACEMENT_CHAR;
    }
    if (pos + len > s.size()) {
        pos += 1;
        return REPLACEMENT_CHAR;
    }
    for (size_t i = 1; i < len; ++i) {
        if ((byte(pos + i) & 0xC0) != 0x80) {
            pos += 1;
            return REPLACEMENT_CHAR;
        }
        cpt = (cpt << 6) | (byte(pos + i) & 0x3F);
    }
    pos += len;
    return cpt;
}

void append_utf8(std::string& out, uint32_t cpt) {
    if (cpt < 0x80) {
        out += char(cpt);
    } else if (cpt < 0x800) {
        out += char(0xC0 | (cpt >> 6));
        out += char(0x80 | (cpt & 0x3F));
    } else if (cpt < 0x10000) {
        out += char(0xE0 | (cpt >> 12));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    } else {
        out += char(0xF0 | (cpt >> 18));
        out += char(0x80 | ((cpt >> 12) & 0x3F));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    }
}

std::string sanitize_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) append_utf8(out, decode_lenient(text, pos));
    return out;
}

size_t utf8_len_from_lead(uint8_t lead) {
    static constexpr uint8_t lengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lengths[lead >> 4];
}

int utf8_sequence_len(std::string_view s, size_t pos) {
    const uint8_t lead = uint8_t(s[pos]);
    if (lead < 0x80) return 1;
    int len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (rules out overlongs, surrogates)
    if (lead >= 0xC2 && lead <= 0xDF) len = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) len = 3, lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
    else if (lead >= 0xF0 && lead <= 0xF4) len = 4, lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    for (int i = 1; i < len; ++i) {
        if (pos + size_t(i) >= s.size()) return -1;
        const uint8_t b = uint8_t(s[pos + size_t(i)]);
        if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return 0;
    }
    return len;
}

const std::string& byte_to_utf8(uint8_t byte) { return byte_map().to_utf8[byte]; }

int utf8_cpt_to_byte(uint32_t cpt) {
    const auto& from = byte_map().from_cpt;
    return cpt < from.size() ? from[cpt] : -1;
}

}  // namespace wb::unicode
