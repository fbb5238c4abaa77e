#include "conversation_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QUuid>

#include <algorithm>

namespace {
const QString kTrash = QStringLiteral(".trash");
const QString kSuffix = QStringLiteral(".json");
}  // namespace

ConversationStore::ConversationStore(const QString& directory, QObject* parent) : QObject(parent), m_directory(directory) {
    QDir().mkpath(m_directory);
    // What was deleted in an earlier run is gone for good: Undo lasts as long as the program runs.
    QDir(QDir(m_directory).filePath(kTrash)).removeRecursively();
    rescan();
}

QString ConversationStore::defaultDirectory() {
    const QString overridden = qEnvironmentVariable("WHITEBOX_DATA_DIR");
    const QString base = overridden.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : overridden;
    return QDir(base).filePath(QStringLiteral("conversations"));
}

QString ConversationStore::pathOf(const QString& id) const {
    return QDir(m_directory).filePath(id + kSuffix);
}

QString ConversationStore::trashPath(const QString& id) const {
    return QDir(QDir(m_directory).filePath(kTrash)).filePath(id + kSuffix);
}

QString ConversationStore::newId() const {
    // Time first, so a directory listing sorts by creation; the random part keeps two windows apart.
    QString id;
    do {
        id = QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss-")) +
             QUuid::createUuid().toString(QUuid::Id128).left(8);
    } while (QFileInfo::exists(pathOf(id)));
    return id;
}

int ConversationStore::indexOf(const QString& id) const {
    for (int i = 0; i < m_list.size(); ++i)
        if (m_list[i].id == id) return i;
    return -1;
}

ConversationInfo ConversationStore::infoOf(const QString& id, const Conversation& c) {
    ConversationInfo info;
    info.id = id;
    info.title = c.displayTitle();
    info.model = c.modelName;
    info.updated = c.updated;
    info.messages = c.totalMessages();
    QStringList text{info.title};
    for (const ChatEntry& m : c.messages) text << m.content;
    info.text = text.join(QLatin1Char('\n')).toLower();
    return info;
}

void ConversationStore::upsert(const ConversationInfo& info) {
    const int i = indexOf(info.id);
    if (i >= 0)
        m_list[i] = info;
    else
        m_list.append(info);
    std::stable_sort(m_list.begin(), m_list.end(),
                     [](const ConversationInfo& a, const ConversationInfo& b) { return a.updated > b.updated; });
}

void ConversationStore::rescan() {
    m_list.clear();
    m_unreadable.clear();
    const QFileInfoList files = QDir(m_directory).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    for (const QFileInfo& f : files) {
        QString error;
        std::optional<Conversation> c = Conversation::load(f.filePath(), &error);
        if (!c) {
            m_unreadable << QStringLiteral("%1: %2").arg(f.fileName(), error);
            continue;
        }
        if (!c->updated.isValid()) c->updated = f.lastModified();
        upsert(infoOf(f.completeBaseName(), *c));
    }
    Q_EMIT changed();
}

QVector<ConversationInfo> ConversationStore::search(const QString& query) const {
    const QStringList words = query.toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QVector<ConversationInfo> out;
    for (const ConversationInfo& info : m_list)
        if (std::all_of(words.begin(), words.end(), [&info](const QString& w) { return info.text.contains(w); })) out.append(info);
    return out;
}

bool ConversationStore::save(const QString& id, const Conversation& conversation, QString* error) {
    QDir().mkpath(m_directory);
    if (!conversation.save(pathOf(id), error)) return false;
    upsert(infoOf(id, conversation));
    Q_EMIT changed();
    return true;
}

std::optional<Conversation> ConversationStore::load(const QString& id, QString* error) const {
    return Conversation::load(pathOf(id), error);
}

bool ConversationStore::rename(const QString& id, const QString& title, QString* error) {
    std::optional<Conversation> c = load(id, error);
    if (!c) return false;
    c->title = title.trimmed();
    return save(id, *c, error);
}

bool ConversationStore::remove(const QString& id, QString* error) {
    const int i = indexOf(id);
    if (i < 0) {
        if (error) *error = tr("There is no saved conversation %1.").arg(id);
        return false;
    }
    QDir().mkpath(QDir(m_directory).filePath(kTrash));
    QFile::remove(trashPath(id));
    if (!QFile::rename(pathOf(id), trashPath(id))) {
        if (error) *error = tr("Cannot move %1 to %2.").arg(pathOf(id), trashPath(id));
        return false;
    }
    m_removed.append(m_list.takeAt(i));
    Q_EMIT changed();
    return true;
}

QString ConversationStore::lastRemovedTitle() const {
    return m_removed.isEmpty() ? QString() : m_removed.last().title;
}

QString ConversationStore::undoRemove(QString* error) {
    if (m_removed.isEmpty()) {
        if (error) *error = tr("Nothing was deleted.");
        return {};
    }
    const ConversationInfo info = m_removed.last();
    if (QFileInfo::exists(pathOf(info.id)) || !QFile::rename(trashPath(info.id), pathOf(info.id))) {
        if (error) *error = tr("Cannot move %1 back to %2.").arg(trashPath(info.id), pathOf(info.id));
        return {};
    }
    m_removed.removeLast();
    upsert(info);
    Q_EMIT changed();
    return info.id;
}
