// libFuzzer target: the conversation-file loader (ui/conversation.cpp, QtCore only) on any bytes, as
// Conversation::load reads a file: QJsonDocument, then Conversation::fromJson. A file it refuses must
// come with an error message; a file it takes must give a tree whose active path is consistent (every
// message has at least one version, the active one among them, and every version can be selected),
// and saving what was loaded must be stable: its JSON read back and written again is the same JSON
// (a conversation opened and saved twice does not drift or lose messages). Nor may the first save lose
// any message of the file: a node the loader took but cannot reach from the root (a parent that does
// not come before its child makes a loop or a dangling branch) would vanish from the saved file.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <QByteArray>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "conversation.h"

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_conversation: %s\n", what);
    std::abort();
}

// Each message's versions, with selecting every one of them (bounded: a hostile file may hold
// thousands; the first 64 messages and 16 versions each cover the tree code's paths).
void check_versions(Conversation& c) {
    for (int i = 0; i < c.messages.size() && i < 64; ++i) {
        const int n = c.versionCount(i);
        if (n < 1 || c.versionIndex(i) < 0 || c.versionIndex(i) >= n) fail("a message's version is out of range");
        for (int v = 0; v < n && v < 16; ++v) {
            if (!c.selectVersion(i, v)) fail("a listed version cannot be selected");
            if (c.versionIndex(i) != v || c.messages.size() <= i) fail("the selected version is not the active one");
        }
    }
    if (c.totalMessages() < c.messages.size()) fail("fewer messages in the tree than on the active path");
}

// The messages a file holds: version 2 lists every node, version 1 one path of messages.
qsizetype messages_in(const QJsonObject& file) {
    if (file.contains(QStringLiteral("nodes"))) return file.value(QStringLiteral("nodes")).toArray().size();
    return file.value(QStringLiteral("messages")).toArray().size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QByteArray bytes = QByteArray::fromRawData(reinterpret_cast<const char*>(data), qsizetype(size));
    const QJsonDocument doc = QJsonDocument::fromJson(bytes);
    if (!doc.isObject()) return 0;  // Conversation::load refuses it as invalid JSON
    QString error;
    std::optional<Conversation> c = Conversation::fromJson(doc.object(), &error);
    if (!c) {
        if (error.isEmpty()) fail("a refused file without an error message");
        return 0;
    }
    const QJsonObject saved = c->toJson();
    if (messages_in(saved) != messages_in(doc.object())) fail("a loaded conversation saved lost or gained messages");
    std::optional<Conversation> again = Conversation::fromJson(saved, &error);
    if (!again) fail("a saved conversation does not load again");
    if (again->toJson() != saved) fail("a conversation saved, loaded and saved again changed");
    if (again->messages.size() != c->messages.size()) fail("the active path changed length through a save");
    check_versions(*c);
    return 0;
}
