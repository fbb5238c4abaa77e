#pragma once
// What conversation_writer writes for version v, and the check that a file holds one complete
// version: every message is one letter (chosen by v) repeated to a length chosen by v, and the title
// names v. A file cut short, mixed from two versions or empty fails the check.
#include <QString>

#include "conversation.h"

namespace writer_content {

constexpr int kFiles = 3;

inline QString fileId(int k) {
    return QStringLiteral("c%1").arg(k);
}

inline QChar letter(qint64 v) {
    return QChar(u'a' + int(v % 26));
}

// 0.3 to 1.5 MB per file, so a write takes long enough to be interrupted.
inline int messageLength(qint64 v) {
    return int((v % 5) + 1) * 100 * 1024;
}

inline Conversation conversation(qint64 v, int k) {
    Conversation c;
    c.title = QStringLiteral("v%1").arg(v);
    for (int m = 0; m < 3; ++m)
        c.append({m % 2 ? QStringLiteral("assistant") : QStringLiteral("user"),
                  QString(messageLength(v) + k, letter(v)), {}, {}});
    return c;
}

inline QString settingsBlob(qint64 v) {
    return QString(messageLength(v) / 4, letter(v));
}

// The version file k holds, or -1 (and why) when it is not one complete version.
inline qint64 versionOf(const Conversation& c, int k, QString* why) {
    if (!c.title.startsWith(QLatin1Char('v'))) {
        *why = QStringLiteral("title %1").arg(c.title);
        return -1;
    }
    bool ok = false;
    const qint64 v = c.title.mid(1).toLongLong(&ok);
    if (!ok || c.messages.size() != 3) {
        *why = QStringLiteral("title %1, %2 messages").arg(c.title).arg(c.messages.size());
        return -1;
    }
    for (const ChatEntry& m : c.messages)
        if (m.content != QString(messageLength(v) + k, letter(v))) {
            *why = QStringLiteral("a message of %1 is not version %2's").arg(c.title).arg(v);
            return -1;
        }
    return v;
}

}  // namespace writer_content
