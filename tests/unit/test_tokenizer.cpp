// Tokenizers without a model: the GPT-2 byte map, the pre-tokenizer splits, BPE merging and special
// tokens on a tiny hand-built byte-level vocabulary, the SentencePiece path on a tiny hand-built SPM
// vocabulary, and UTF-8-safe streaming.
#include <QtTest>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

using wb::PreTokenizerKind;
using wb::TokenType;
using wb::Tokenizer;
using wb::VocabSpec;

Q_DECLARE_METATYPE(PreTokenizerKind)

namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<std::string>;

QString show(const std::vector<std::string>& words) {
    QStringList parts;
    for (const auto& w : words) parts << ("[" + QString::fromStdString(w) + "]");
    return parts.join(' ');
}

// Byte-level vocabulary: ids 0..255 are the mapped characters of bytes 0..255, then merge results
// and special tokens.
VocabSpec tiny_bpe_spec() {
    VocabSpec s;
    s.model = "gpt2";
    s.pre = "gpt-2";
    for (int b = 0; b < 256; ++b) s.tokens.push_back(wb::unicode::byte_to_utf8(uint8_t(b)));
    s.types.assign(256, TokenType::NORMAL);
    const auto add = [&](const std::string& text, TokenType type) {
        s.tokens.push_back(text);
        s.types.push_back(type);
    };
    for (const char* t : {"el", "lo", "hel", "hello", "aa"}) add(t, TokenType::NORMAL);
    s.merges = {"e l", "l o", "h el", "hel lo", "a a"};
    add("<|im_start|>", TokenType::CONTROL);  // 261
    add("<|im_end|>", TokenType::CONTROL);    // 262
    add("<a>", TokenType::CONTROL);           // 263
    add("<a><b>", TokenType::CONTROL);        // 264
    add("<tag>", TokenType::USER_DEFINED);    // 265
    s.bos_id = 261;
    s.eos_id = 262;
    return s;
}

// SentencePiece vocabulary with all 256 byte pieces (so byte fallback is on) and a few merges whose
// scores make the merge order matter.
VocabSpec tiny_spm_spec() {
    VocabSpec s;
    s.model = "llama";
    const auto add = [&](const std::string& text, float score, TokenType type) {
        s.tokens.push_back(text);
        s.scores.push_back(score);
        s.types.push_back(type);
    };
    add("<unk>", 0, TokenType::UNKNOWN);
    add("<s>", 0, TokenType::CONTROL);
    add("</s>", 0, TokenType::CONTROL);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        add(name, 0, TokenType::BYTE);
    }
    for (const char* c : {"\xE2\x96\x81", "h", "e", "l", "o", "w", "r", "d"}) add(c, -100, TokenType::NORMAL);
    add("he", -1, TokenType::NORMAL);
    add("ll", -2, TokenType::NORMAL);
    add("hell", -3, TokenType::NORMAL);
    add("hello", -4, TokenType::NORMAL);
    add("\xE2\x96\x81hello", -5, TokenType::NORMAL);
    add("or", -6, TokenType::NORMAL);
    add("ld", -7, TokenType::NORMAL);
    add("\xE2\x96\x81w", -8, TokenType::NORMAL);
    return s;
}

int32_t id_of(const Tokenizer& tok, const std::string& text) {
    const auto id = tok.find_token(text);
    if (!id) qFatal("test vocabulary lacks '%s'", text.c_str());
    return *id;
}

int32_t spm_byte(const Tokenizer& tok, int b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    return id_of(tok, name);
}

}  // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private slots:
    void byte_map_moves_unprintable_bytes_above_u0100() {
        QCOMPARE(wb::unicode::byte_to_utf8(' '), std::string("\xC4\xA0"));   // U+0120 'Ġ'
        QCOMPARE(wb::unicode::byte_to_utf8('\n'), std::string("\xC4\x8A"));  // U+010A 'Ċ'
        QCOMPARE(wb::unicode::byte_to_utf8('\t'), std::string("\xC4\x89"));  // U+0109
        QCOMPARE(wb::unicode::byte_to_utf8('a'), std::string("a"));
        QCOMPARE(wb::unicode::byte_to_utf8(0xE9), std::string("\xC3\xA9"));  // printable Latin-1 keeps its value
        for (int b = 0; b < 256; ++b) {
            const std::string& s = wb::unicode::byte_to_utf8(uint8_t(b));
            size_t pos = 0;
            QCOMPARE(wb::unicode::utf8_cpt_to_byte(wb::unicode::decode_lenient(s, pos)), b);
            QCOMPARE(pos, s.size());
        }
    }

    void character_classes() {
        using namespace wb::unicode;
        QCOMPARE(cpt_flags('a'), uint8_t(CPT_LETTER));
        QCOMPARE(cpt_flags('7'), uint8_t(CPT_NUMBER));
        QCOMPARE(cpt_flags(' '), uint8_t(CPT_WHITESPACE));
        QCOMPARE(cpt_flags(0x4E2D), uint8_t(CPT_LETTER));      // 中
        QCOMPARE(cpt_flags(0x0663), uint8_t(CPT_NUMBER));      // Arabic-Indic three
        QCOMPARE(cpt_flags(0x00B2), uint8_t(CPT_NUMBER));      // superscript two (No)
        QCOMPARE(cpt_flags(0x3000), uint8_t(CPT_WHITESPACE));  // ideographic space
        QCOMPARE(cpt_flags(0x0085), uint8_t(CPT_WHITESPACE));
        QCOMPARE(cpt_flags(0x1F600), uint8_t(0));              // emoji: a symbol
        QCOMPARE(cpt_flags('!'), uint8_t(0));
    }

    void pre_tokenizer_splits_data() {
        QTest::addColumn<PreTokenizerKind>("kind");
        QTest::addColumn<std::string>("text");
        QTest::addColumn<Words>("words");
        using K = PreTokenizerKind;
        QTest::newRow("gpt2 digits run") << K::GPT2 << std::string("Hello world! 123") << Words{"Hello", " world", "!", " 123"};
        QTest::newRow("gpt2 contraction") << K::GPT2 << std::string("don't") << Words{"don", "'t"};
        QTest::newRow("gpt2 contraction is case sensitive") << K::GPT2 << std::string("I'M") << Words{"I", "'", "M"};
        QTest::newRow("gpt2 space runs") << K::GPT2 << std::string("  multiple   spaces") << Words{" ", " multiple", "  ", " spaces"};
        QTest::newRow("gpt2 newlines") << K::GPT2 << std::string("a\n\nb") << Words{"a", "\n", "\n", "b"};
        QTest::newRow("gpt2 trailing spaces") << K::GPT2 << std::string("end  ") << Words{"end", "  "};
        QTest::newRow("gpt2 cjk") << K::GPT2 << std::string("\xE4\xB8\xAD\xE6\x96\x87 \xE5\xAD\x97") << Words{"\xE4\xB8\xAD\xE6\x96\x87", " \xE5\xAD\x97"};
        QTest::newRow("gpt2 emoji") << K::GPT2 << std::string("hi \xF0\x9F\x98\x80\xF0\x9F\x98\x80!") << Words{"hi", " \xF0\x9F\x98\x80\xF0\x9F\x98\x80!"};
        QTest::newRow("smollm digits alone") << K::SMOLLM << std::string("Hello world! 123") << Words{"Hello", " world", "!", " ", "1", "2", "3"};
        QTest::newRow("smollm digits inside word") << K::SMOLLM << std::string("abc123def") << Words{"abc", "1", "2", "3", "def"};
        QTest::newRow("smollm non-ascii digit") << K::SMOLLM << std::string("a\xD9\xA3" "b") << Words{"a", "\xD9\xA3", "b"};
        QTest::newRow("smollm space before digit stays alone") << K::SMOLLM << std::string("x 1 y") << Words{"x", " ", "1", " y"};
        QTest::newRow("llama3 digit groups") << K::LLAMA3 << std::string("Hello world! 12345") << Words{"Hello", " world", "!", " ", "123", "45"};
        QTest::newRow("llama3 contraction any case") << K::LLAMA3 << std::string("I'M HERE") << Words{"I", "'M", " HERE"};
        QTest::newRow("llama3 newlines then spaces") << K::LLAMA3 << std::string("a\n\n  b") << Words{"a", "\n\n", " ", " b"};
        QTest::newRow("llama3 punctuation takes newlines") << K::LLAMA3 << std::string("hi...\n\nyo") << Words{"hi", "...\n\n", "yo"};
        QTest::newRow("llama3 tab joins word") << K::LLAMA3 << std::string("\thello") << Words{"\thello"};
        QTest::newRow("llama3 cjk") << K::LLAMA3 << std::string("\xE4\xB8\xAD\xE6\x96\x87!") << Words{"\xE4\xB8\xAD\xE6\x96\x87", "!"};
        QTest::newRow("qwen2 single digits") << K::QWEN2 << std::string("Hello 2024!") << Words{"Hello", " ", "2", "0", "2", "4", "!"};
        QTest::newRow("qwen2 contraction") << K::QWEN2 << std::string("we'RE") << Words{"we", "'RE"};
        // Tekken (llama.cpp's std::regex reading): a letter run ends where a capital follows a small letter.
        QTest::newRow("tekken case changes") << K::TEKKEN << std::string("HelloWorld iPhone") << Words{"Hello", "World", " i", "Phone"};
        // A non-ASCII letter is both "upper" and "lower": the first alternative takes it alone.
        QTest::newRow("tekken non-ascii capital") << K::TEKKEN << std::string("\xC3\x89" "COLE") << Words{"\xC3\x89", "COLE"};
        QTest::newRow("tekken digits, punctuation takes newlines and slashes")
            << K::TEKKEN << std::string("x 12!\n/\n  y") << Words{"x", " ", "1", "2", "!\n/\n", " ", " y"};
        QTest::newRow("tekken newlines then spaces") << K::TEKKEN << std::string("a\n\n  b") << Words{"a", "\n\n", " ", " b"};
        QTest::newRow("tekken tab joins word") << K::TEKKEN << std::string("\thello") << Words{"\thello"};
        QTest::newRow("tekken no contractions") << K::TEKKEN << std::string("don't") << Words{"don", "'t"};
    }

    void pre_tokenizer_splits() {
        QFETCH(PreTokenizerKind, kind);
        QFETCH(std::string, text);
        QFETCH(Words, words);
        Words got;
        for (const auto w : wb::pre_tokenize(kind, text)) got.emplace_back(w);
        if (got != words) qWarning() << "expected" << show(words) << "got" << show(got);
        QVERIFY(got == words);
    }

    // Every splitter on random text made of the pieces that steer them (cases, digits of two scripts,
    // line breaks, slashes, punctuation, Unicode spaces, marks, CJK, emoji): the words cover the text
    // exactly, in order, none empty. Under the ASan pass this also finds a read past the text.
    void pre_tokenizers_cover_any_text() {
        const std::vector<std::string> atoms = {"a", "b", "Z", "Q", "0", "7", " ", "  ", "\n", "\r", "\t", "/", "'",
                                                "!", ".", "-", "\xC3\x89", "\xC3\x9F", "\xE4\xB8\xAD",
                                                "\xD9\xA1", "\xC2\xA0", "\xCC\x81", "\xF0\x9F\x99\x82", "\xE2\x80\xA8"};
        uint64_t seed = 12345;
        const auto next = [&seed](uint64_t n) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            return (seed >> 33) % n;
        };
        for (const PreTokenizerKind kind : {PreTokenizerKind::GPT2, PreTokenizerKind::SMOLLM, PreTokenizerKind::LLAMA3,
                                            PreTokenizerKind::QWEN2, PreTokenizerKind::TEKKEN}) {
            for (int round = 0; round < 4000; ++round) {
                std::string text;
                for (uint64_t n = next(24); n > 0; --n) text += atoms[next(atoms.size())];
                std::string joined;
                for (const std::string_view w : wb::pre_tokenize(kind, text)) {
                    QVERIFY2(!w.empty(), qPrintable(QString::fromStdString(text)));
                    joined += w;
                }
                QVERIFY2(joined == text, qPrintable(QString::fromStdString(text)));
            }
        }
    }

    void pre_tokenizer_names() {
        QCOMPARE(wb::pre_tokenizer_from_name("smollm"), std::optional(PreTokenizerKind::SMOLLM));
        QCOMPARE(wb::pre_tokenizer_from_name("starcoder"), std::optional(PreTokenizerKind::SMOLLM));
        QCOMPARE(wb::pre_tokenizer_from_name("llama-bpe"), std::optional(PreTokenizerKind::LLAMA3));
        QCOMPARE(wb::pre_tokenizer_from_name("qwen2"), std::optional(PreTokenizerKind::QWEN2));
        QCOMPARE(wb::pre_tokenizer_from_name("deepseek-r1-qwen"), std::optional(PreTokenizerKind::QWEN2));
        QCOMPARE(wb::pre_tokenizer_from_name("kormo"), std::optional(PreTokenizerKind::QWEN2));
        QCOMPARE(wb::pre_tokenizer_from_name("gpt-2"), std::optional(PreTokenizerKind::GPT2));
        QCOMPARE(wb::pre_tokenizer_from_name("tekken"), std::optional(PreTokenizerKind::TEKKEN));
        QVERIFY(!wb::pre_tokenizer_from_name("no-such-pre"));
    }

    void bpe_merges_lowest_rank_first() {
        const auto tok = Tokenizer::from_vocab(tiny_bpe_spec());
        QCOMPARE(tok->model_name(), std::string("gpt2"));
        QVERIFY(tok->warning().empty());
        const int32_t hello = id_of(*tok, "hello");
        QCOMPARE(tok->encode("hello", false, false), (Ids{hello}));
        // The space is its own symbol (no merge with it) and the rest merges as before.
        QCOMPARE(tok->encode(" hello", false, false), (Ids{' ', hello}));
        // Equal ranks merge leftmost first: "aaa" -> "aa" "a".
        QCOMPARE(tok->encode("aaa", false, false), (Ids{id_of(*tok, "aa"), 'a'}));
        // "hel" + "l" has no merge, so "hell" stays two tokens.
        QCOMPARE(tok->encode("hell", false, false), (Ids{id_of(*tok, "hel"), 'l'}));
        QCOMPARE(tok->decode(tok->encode(" hello\n", false, false), false), std::string(" hello\n"));
    }

    // Another splitter gives other tokens, so an unknown name is refused (as llama.cpp refuses it),
    // naming it and what is supported, instead of running with GPT-2's rules.
    void bpe_unknown_pre_tokenizer_is_refused() {
        VocabSpec spec = tiny_bpe_spec();
        spec.pre = "brand-new-model";
        try {
            Tokenizer::from_vocab(std::move(spec));
            QFAIL("an unknown pre-tokenizer was accepted");
        } catch (const wb::Error& e) {
            const std::string what = e.what();
            QVERIFY2(what.find("unsupported pre-tokenizer 'brand-new-model'") != std::string::npos, e.what());
            QVERIFY2(what.find("supported: default, gpt-2") != std::string::npos, e.what());
        }
    }

    void special_tokens_are_cut_out_when_parsing_specials() {
        const auto tok = Tokenizer::from_vocab(tiny_bpe_spec());
        const int32_t hello = id_of(*tok, "hello");
        QCOMPARE(tok->encode("<|im_start|>hello<|im_end|>", false, true), (Ids{261, hello, 262}));
        // Not parsing specials: the marker is plain text, byte by byte.
        const std::string marker = "<|im_start|>";
        Ids bytes(marker.begin(), marker.end());
        QCOMPARE(tok->encode(marker, false, false), bytes);
        // Longer special texts are cut first.
        QCOMPARE(tok->encode("<a><b><a>", false, true), (Ids{264, 263}));
        // USER_DEFINED texts are cut even without parse_special (llama.cpp and HF behaviour).
        QCOMPARE(tok->encode("hello<tag>", false, false), (Ids{hello, 265}));
        QCOMPARE(tok->token_to_piece(261, false), std::string());
        QCOMPARE(tok->token_to_piece(261, true), std::string("<|im_start|>"));
        QCOMPARE(tok->token_to_piece(265, false), std::string("<tag>"));
        QCOMPARE(tok->decode({261, hello, 262}, true), std::string("<|im_start|>hello<|im_end|>"));
        QCOMPARE(tok->decode({261, hello, 262}, false), std::string("hello"));
    }

    void bos_and_end_of_generation() {
        VocabSpec spec = tiny_bpe_spec();
        QVERIFY(Tokenizer::from_vocab(spec)->encode("hello", true, false).size() == 1);  // gpt2: no BOS by default
        spec.add_bos = true;
        const auto tok = Tokenizer::from_vocab(std::move(spec));
        QCOMPARE(tok->encode("hello", true, false), (Ids{261, id_of(*tok, "hello")}));
        QCOMPARE(tok->encode("hello", false, false), (Ids{id_of(*tok, "hello")}));
        QVERIFY(tok->is_eog(262));   // eos and "<|im_end|>"
        QVERIFY(!tok->is_eog(261));
        QCOMPARE(tok->eog_ids(), (Ids{262}));
        QCOMPARE(tok->find_token("hel"), std::optional<int32_t>(258));
        QVERIFY(!tok->find_token("nope"));
    }

    // llama.cpp's end-of-generation rules: end-of-turn texts count (and become CONTROL) whatever the
    // file says; "</s>" stops being one where "<|tool_response>" is, and "<|end|>" where the
    // harmony markers "<|return|>" and "<|call|>" are.
    void end_of_generation_follows_llama_cpp_rules() {
        const auto with = [](std::initializer_list<std::pair<const char*, TokenType>> extra) {
            VocabSpec spec = tiny_bpe_spec();
            for (const auto& [text, type] : extra) {
                spec.tokens.push_back(text);
                spec.types.push_back(type);
            }
            return Tokenizer::from_vocab(std::move(spec));
        };
        // Qwen 2: a NORMAL "</s>" and the FIM markers; "</s>" is then not matched in plain text.
        auto tok = with({{"</s>", TokenType::NORMAL}, {"<｜end▁of▁sentence｜>", TokenType::CONTROL},
                         {"<|fim_pad|>", TokenType::CONTROL}, {"<|repo_name|>", TokenType::CONTROL},
                         {"<|file_sep|>", TokenType::CONTROL}, {"<|fim_prefix|>", TokenType::CONTROL}});
        QCOMPARE(tok->eog_ids(), (Ids{262, 266, 267, 268, 269, 270}));
        QCOMPARE(tok->token_type(266), TokenType::CONTROL);
        QCOMPARE(tok->encode("</s>", false, true), (Ids{266}));
        QCOMPARE(tok->encode("</s>", false, false).size(), size_t(4));
        // Gemma 4 style: "</s>" is ordinary text next to "<|tool_response>".
        tok = with({{"</s>", TokenType::USER_DEFINED}, {"<|tool_response>", TokenType::CONTROL}});
        QCOMPARE(tok->eog_ids(), (Ids{262, 267}));
        QCOMPARE(tok->token_type(266), TokenType::NORMAL);
        // OpenAI harmony: "<|end|>" ends a message, not the generation.
        tok = with({{"<|end|>", TokenType::CONTROL}, {"<|return|>", TokenType::CONTROL}, {"<|call|>", TokenType::CONTROL}});
        QCOMPARE(tok->eog_ids(), (Ids{262, 267, 268}));
        QCOMPARE(tok->token_type(266), TokenType::USER_DEFINED);
        tok = with({{"<|end|>", TokenType::CONTROL}});
        QCOMPARE(tok->eog_ids(), (Ids{262, 266}));
    }

    void inconsistent_vocabularies_are_rejected() {
        VocabSpec spec = tiny_bpe_spec();
        spec.model = "t5";
        QVERIFY_THROWS_EXCEPTION(wb::Error, Tokenizer::from_vocab(spec));
        spec = tiny_bpe_spec();
        spec.types.pop_back();
        QVERIFY_THROWS_EXCEPTION(wb::Error, Tokenizer::from_vocab(spec));
        spec = tiny_bpe_spec();
        spec.eos_id = 100000;
        QVERIFY_THROWS_EXCEPTION(wb::Error, Tokenizer::from_vocab(spec));
    }

    void spm_merges_by_score_with_dummy_prefix() {
        const auto tok = Tokenizer::from_vocab(tiny_spm_spec());
        QCOMPARE(tok->model_name(), std::string("llama"));
        const Ids expected = {id_of(*tok, "\xE2\x96\x81hello"), id_of(*tok, "\xE2\x96\x81w"), id_of(*tok, "or"),
                              id_of(*tok, "ld")};
        QCOMPARE(tok->encode("hello world", false, false), expected);
        QCOMPARE(tok->encode("hello world", true, false).front(), 1);  // SPM adds BOS by default
        QCOMPARE(tok->decode(expected, false), std::string("hello world"));
        QCOMPARE(tok->token_to_piece(expected[0], false), std::string(" hello"));
    }

    void spm_byte_fallback() {
        const auto tok = Tokenizer::from_vocab(tiny_spm_spec());
        const Ids ids = tok->encode("\xC3\xA9", false, false);  // é is not a piece
        QCOMPARE(ids, (Ids{id_of(*tok, "\xE2\x96\x81"), spm_byte(*tok, 0xC3), spm_byte(*tok, 0xA9)}));
        QCOMPARE(tok->decode(ids, false), std::string("\xC3\xA9"));
        // Invalid UTF-8 comes out as its raw bytes, like llama.cpp, not as U+FFFD.
        QCOMPARE(tok->encode("h\xFF", false, false), (Ids{id_of(*tok, "\xE2\x96\x81"), id_of(*tok, "h"), spm_byte(*tok, 0xFF)}));
    }

    void spm_dummy_prefix_follows_special_tokens() {
        const auto tok = Tokenizer::from_vocab(tiny_spm_spec());
        const int32_t sp_hello = id_of(*tok, "\xE2\x96\x81hello");
        QCOMPARE(tok->encode("hello</s>hello", false, true), (Ids{sp_hello, 2, sp_hello}));
        VocabSpec spec = tiny_spm_spec();
        spec.add_space_prefix = false;
        const auto no_prefix = Tokenizer::from_vocab(std::move(spec));
        const int32_t hello = id_of(*no_prefix, "hello");
        QCOMPARE(no_prefix->encode("hello</s>hello", false, true), (Ids{hello, 2, hello}));
        QCOMPARE(no_prefix->decode({id_of(*no_prefix, "\xE2\x96\x81w")}, false), std::string(" w"));
    }

    void spm_accepts_what_sentencepiece_would_reject() {
        VocabSpec spec = tiny_spm_spec();
        spec.tokens.push_back("");      // llama.cpp renames empty pieces
        spec.tokens.push_back("he");    // a duplicate
        spec.scores.insert(spec.scores.end(), {0, 0});
        spec.types.insert(spec.types.end(), {TokenType::NORMAL, TokenType::NORMAL});
        const int32_t empty_id = int32_t(spec.tokens.size()) - 2;
        const auto tok = Tokenizer::from_vocab(std::move(spec));
        QCOMPARE(tok->token_text(empty_id), "[EMPTY_" + std::to_string(empty_id) + "]");
        QCOMPARE(tok->encode("hello", false, false), (Ids{id_of(*tok, "\xE2\x96\x81hello")}));
    }

    void stream_decoder_holds_back_split_characters() {
        const auto tok = Tokenizer::from_vocab(tiny_bpe_spec());
        wb::StreamDecoder dec(*tok);
        // "é" = C3 A9 arrives as two byte tokens; nothing is emitted until it is complete.
        QCOMPARE(dec.push(0xC3), std::string());
        QCOMPARE(dec.push(0xA9), std::string("\xC3\xA9"));
        QCOMPARE(dec.push('a'), std::string("a"));
        // A 4-byte emoji split 1 + 3.
        QCOMPARE(dec.push(0xF0), std::string());
        QCOMPARE(dec.push(0x9F), std::string());
        QCOMPARE(dec.push(0x98), std::string());
        QCOMPARE(dec.push(0x80), std::string("\xF0\x9F\x98\x80"));
        // Bytes that can never form a character are replaced at once.
        QCOMPARE(dec.push(0xFF), std::string("\xEF\xBF\xBD"));
        QCOMPARE(dec.push(0xE2), std::string());
        QCOMPARE(dec.push('b'), std::string("\xEF\xBF\xBD" "b"));
        QCOMPARE(dec.push(0xE2), std::string());
        QCOMPARE(dec.flush(), std::string("\xEF\xBF\xBD"));
        QCOMPARE(dec.flush(), std::string());
        // Specials are text only when asked for.
        QCOMPARE(dec.push(261), std::string());
        wb::StreamDecoder special(*tok, true);
        QCOMPARE(special.push(261), std::string("<|im_start|>"));
    }
};

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
