#pragma once
// ConversationStore: the directory of saved conversations, one JSON file each (<id>.json, written
// atomically), under QStandardPaths::AppDataLocation/conversations ($WHITEBOX_DATA_DIR/conversations
// when that is set: the tests and a portable install). It keeps a list of what is there (title,
// date, model, text for the search), newest first, renames, and deletes with undo: a deleted file is
// moved to a .trash folder for as long as the program runs, and Undo moves it back.
#include <optional>

#include <QDateTime>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "conversation.h"

struct ConversationInfo {
    QString id;
    QString title;       // Conversation::displayTitle
    QString model;
    QDateTime updated;
    int messages = 0;    // in every branch
    QString text;        // title and the active path's messages, lower case (the search looks here)
};

class ConversationStore : public QObject {
    Q_OBJECT

public:
    explicit ConversationStore(const QString& directory = defaultDirectory(), QObject* parent = nullptr);

    static QString defaultDirectory();
    QString directory() const { return m_directory; }
    QString pathOf(const QString& id) const;
    // A fresh id (not used by any file).
    QString newId() const;

    // Newest first.
    const QVector<ConversationInfo>& conversations() const { return m_list; }
    int indexOf(const QString& id) const;
    // Those whose title or messages hold every word of `query` (case-insensitive); all for an empty one.
    QVector<ConversationInfo> search(const QString& query) const;
    // Files of the directory that could not be read, with why ("name: error").
    QStringList unreadable() const { return m_unreadable; }

    bool save(const QString& id, const Conversation& conversation, QString* error);
    std::optional<Conversation> load(const QString& id, QString* error) const;
    bool rename(const QString& id, const QString& title, QString* error);
    bool remove(const QString& id, QString* error);
    bool canUndoRemove() const { return !m_removed.isEmpty(); }
    // Title of the conversation Undo would bring back.
    QString lastRemovedTitle() const;
    // Brings the last deleted conversation back; its id, or empty (and the error).
    QString undoRemove(QString* error);
    // Reads the directory again.
    void rescan();

Q_SIGNALS:
    void changed();

private:
    QString trashPath(const QString& id) const;
    void upsert(const ConversationInfo& info);
    static ConversationInfo infoOf(const QString& id, const Conversation& c);

    QString m_directory;
    QVector<ConversationInfo> m_list;
    QStringList m_unreadable;
    QVector<ConversationInfo> m_removed;  // the undo stack, last deleted last
};
