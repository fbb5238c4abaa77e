#pragma once
// ConversationStore: the directory of saved conversations, one JSON file each (<id>.json, written
// atomically), under QStandardPaths::AppDataLocation/conversations ($WHITEBOX_DATA_DIR/conversations
// when that is set: the tests and a portable install). It keeps a list of what is there (title,
// date, model, the text of every message of every branch for the search), newest first, renames,
// and deletes with undo.
//
// Start-up reads the list from an index (.index.json: one entry per file with its size and
// modification time), so it does not parse every conversation (files carry every token's
// candidates); only files the index does not know, or that changed since (another instance, a
// copy), are parsed. The index is a cache: a missing, stale or broken one costs parsing, never an entry.
//
// A deleted file is moved to this instance's own folder under .trash for as long as the program
// runs, and Undo moves it back. Each instance holds a lock file beside its folder; at start-up only
// the folders of instances that no longer run are emptied (a second window leaves the first one's
// undo alone). An instance that could not take its lock (a full disk, a read-only .trash) owns no
// folder there, since any other instance may empty an unlocked one: it keeps what it deletes in
// memory for Undo instead, and never empties a folder of its own name. Files directly in .trash were
// deleted by an older version (one folder for every instance); they are left where they are, as
// that version's Undo may still want them.
#include <memory>
#include <optional>

#include <QDateTime>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>

#include "conversation.h"

class QLockFile;

struct ConversationInfo {
    QString id;
    QString title;       // Conversation::displayTitle
    QString model;
    QDateTime updated;
    int messages = 0;    // in every branch
    QString text;        // title and every message of every branch, lower case (the search looks here)
    // The file as the info was read from it (the index is trusted while both match).
    qint64 fileSize = -1;
    qint64 fileModifiedMs = -1;
};

class ConversationStore : public QObject {
    Q_OBJECT

public:
    // instance: the name of this instance's undo folder; empty, a fresh random one (a test passes the
    // name another instance holds, to see what happens when the lock cannot be taken).
    explicit ConversationStore(const QString& directory = defaultDirectory(), QObject* parent = nullptr,
                               const QString& instance = {});
    ~ConversationStore() override;

    static QString defaultDirectory();
    QString directory() const { return m_directory; }
    QString pathOf(const QString& id) const;
    QString indexPath() const;
    // A fresh id (not used by any file).
    QString newId() const;

    // Newest first.
    const QVector<ConversationInfo>& conversations() const { return m_list; }
    int indexOf(const QString& id) const;
    // Those whose title or messages (any branch) hold every word of `query` (case-insensitive); all
    // for an empty one.
    QVector<ConversationInfo> search(const QString& query) const;
    // Files of the directory that could not be read, with why ("name: error").
    QStringList unreadable() const { return m_unreadable; }
    // Conversation files the last rescan parsed (the others came from the index).
    int parsedAtScan() const { return m_parsedAtScan; }

    bool save(const QString& id, const Conversation& conversation, QString* error);
    std::optional<Conversation> load(const QString& id, QString* error) const;
    bool rename(const QString& id, const QString& title, QString* error);
    bool remove(const QString& id, QString* error);
    bool canUndoRemove() const { return !m_removed.isEmpty(); }
    // Whether this instance holds the lock of its undo folder (else Undo keeps deleted files in memory).
    bool hasUndoFolder() const { return m_trashLock != nullptr; }
    // Title of the conversation Undo would bring back.
    QString lastRemovedTitle() const;
    // Brings the last deleted conversation back; its id, or empty (and the error).
    QString undoRemove(QString* error);
    // Reads the directory again.
    void rescan();
    // Writes the index now (it is otherwise written shortly after a change, and at the end).
    bool writeIndex(QString* error = nullptr);

Q_SIGNALS:
    void changed();

private:
    QString trashDir() const;
    QString trashPath(const QString& id) const;
    // Takes this instance's trash folder and empties those of instances that no longer run.
    void claimTrash(const QString& instance);
    QVector<ConversationInfo> readIndex() const;
    void upsert(const ConversationInfo& info);
    static ConversationInfo infoOf(const QString& id, const Conversation& c);
    void stampFile(ConversationInfo& info) const;
    void indexChanged() { m_indexTimer.start(); }

    QString m_directory;
    QString m_instance;                // this instance's trash folder name
    std::unique_ptr<QLockFile> m_trashLock;
    QVector<ConversationInfo> m_list;
    QStringList m_unreadable;
    struct Removed {
        ConversationInfo info;
        bool inMemory = false;  // the file's bytes are here, not in the undo folder (no lock of our own)
        QByteArray bytes;
    };
    QVector<Removed> m_removed;  // the undo stack, last deleted last
    QTimer m_indexTimer;
    int m_parsedAtScan = 0;
};
