#pragma once
// The message a window's user typed and did not send, kept in the settings (AppSettings) so that it is
// there after a restart. Each running window owns one draft under a name of its own and holds a lock file
// beside the settings file while it runs; a window that starts takes over the drafts of windows that have
// quit (their locks can be taken) and never those of running ones. Liveness sits next to the drafts, so
// windows on other data folders or whose other locks failed are judged by the same rule.
#include <QString>

#include <memory>

class QLockFile;

class MessageDrafts {
public:
    MessageDrafts();
    ~MessageDrafts();
    MessageDrafts(const MessageDrafts&) = delete;
    MessageDrafts& operator=(const MessageDrafts&) = delete;

    // The drafts of windows that have quit, and the one an older version kept under a single key, joined
    // one after the other; from now on they are this window's draft (written before theirs are removed:
    // a crash in between keeps the text twice, never loses it).
    QString adopt();
    // This window's draft; empty removes it.
    void save(const QString& text);
    // Whether this window holds its lock (without it, a later window may take its draft over as well).
    bool ownsLock() const;

private:
    QString m_name;
    std::unique_ptr<QLockFile> m_lock;
};
