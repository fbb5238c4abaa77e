#include "conversation_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QSaveFile>
#include <QStandardPaths>
#include <QUuid>

#include <algorithm>

namespace {
const QString kTrash = QStringLiteral(".trash");
const QString kSuffix = QStringLiteral(".json");
const QString kIndex = QStringLiteral(".index.json");
const QString kLockSuffix = QStringLiteral(".lock");
constexpr int kIndexVersion = 1;
// Saves come in bursts (a reply, a rename): the index is written once they pause.
constexpr int kIndexDelayMs = 2000;

QLockFile* instanceLock(const QString& path) {
    auto* lock = new QLockFile(path);
    // Stale only when the process that holds it has gone (never by age: a window stays open for days).
    lock->setStaleLockTime(0);
    return lock;
}
}  // namespace

ConversationStore::ConversationStore(const QString& directory, QObject* parent, const QString& instance)
    : QObject(parent), m_directory(directory) {
    QDir().mkpath(m_directory);
    m_indexTimer.setSingleShot(true);
    m_indexTimer.setInterval(kIndexDelayMs);
    connect(&m_indexTimer, &QTimer::timeout, this, [this] { writeIndex(); });
    claimTrash(instance);
    rescan();
}

ConversationStore::~ConversationStore() {
    if (m_indexTimer.isActive()) writeIndex();
    // What this instance deleted is gone for good: Undo lasts as long as the program runs. Without
    // the lock, a folder of this name is another instance's.
    if (!m_trashLock) return;
    QDir(trashDir()).removeRecursively();
    m_trashLock->unlock();
}

void ConversationStore::claimTrash(const QString& instance) {
    const QDir trash(QDir(m_directory).filePath(kTrash));
    QDir().mkpath(trash.path());
    m_instance = instance.isEmpty() ? QUuid::createUuid().toString(QUuid::Id128).left(12) : instance;
    m_trashLock.reset(instanceLock(trash.filePath(m_instance + kLockSuffix)));
    if (!m_trashLock->tryLock(0)) m_trashLock.reset();
    // Only folders and their locks are looked at: files directly in .trash (an older version's
    // deleted conversations) stay.
    QStringList others = trash.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& lockName : trash.entryList({QStringLiteral("*") + kLockSuffix}, QDir::Files))
        others << lockName.chopped(kLockSuffix.size());
    others.removeDuplicates();
    for (const QString& other : others) {
        if (other == m_instance) continue;
        // A lock we can take is one whose instance has gone (or never took one).
        std::unique_ptr<QLockFile> lock(instanceLock(trash.filePath(other + kLockSuffix)));
        if (!lock->tryLock(0)) continue;
        QDir(trash.filePath(other)).removeRecursively();
        lock->unlock();  // removes the lock file
    }
}

QString ConversationStore::defaultDirectory() {
    const QString overridden = qEnvironmentVariable("WHITEBOX_DATA_DIR");
    const QString base = overridden.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : overridden;
    return QDir(base).filePath(QStringLiteral("conversations"));
}

QString ConversationStore::pathOf(const QString& id) const {
    return QDir(m_directory).filePath(id + kSuffix);
}

QString ConversationStore::indexPath() const {
    return QDir(m_directory).filePath(kIndex);
}

QString ConversationStore::trashDir() const {
    return QDir(QDir(m_directory).filePath(kTrash)).filePath(m_instance);
}

QString ConversationStore::trashPath(const QString& id) const {
    return QDir(trashDir()).filePath(id + kSuffix);
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
    text << c.allContents();
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

void ConversationStore::stampFile(ConversationInfo& info) const {
    const QFileInfo f(pathOf(info.id));
    info.fileSize = f.size();
    info.fileModifiedMs = f.lastModified().toMSecsSinceEpoch();
}

QVector<ConversationInfo> ConversationStore::readIndex() const {
    QFile file(indexPath());
    if (!file.open(QIODevice::ReadOnly)) return {};
    const QJsonObject root = QJsonDocument::fromJson(file.readAll()).object();
    if (root.value(QStringLiteral("version")).toInt() != kIndexVersion) return {};
    QVector<ConversationInfo> out;
    for (const QJsonValue& v : root.value(QStringLiteral("entries")).toArray()) {
        const QJsonObject o = v.toObject();
        ConversationInfo info;
        info.id = o.value(QStringLiteral("id")).toString();
        info.title = o.value(QStringLiteral("title")).toString();
        info.model = o.value(QStringLiteral("model")).toString();
        info.updated = QDateTime::fromMSecsSinceEpoch(qint64(o.value(QStringLiteral("updated")).toDouble()), Qt::UTC);
        info.messages = o.value(QStringLiteral("messages")).toInt();
        info.text = o.value(QStringLiteral("text")).toString();
        info.fileSize = qint64(o.value(QStringLiteral("size")).toDouble(-1));
        info.fileModifiedMs = qint64(o.value(QStringLiteral("modified")).toDouble(-1));
        if (!info.id.isEmpty()) out.append(info);
    }
    return out;
}

bool ConversationStore::writeIndex(QString* error) {
    m_indexTimer.stop();
    QJsonArray entries;
    for (const ConversationInfo& info : m_list)
        entries.append(QJsonObject{{QStringLiteral("id"), info.id},
                                   {QStringLiteral("title"), info.title},
                                   {QStringLiteral("model"), info.model},
                                   {QStringLiteral("updated"), double(info.updated.toMSecsSinceEpoch())},
                                   {QStringLiteral("messages"), info.messages},
                                   {QStringLiteral("text"), info.text},
                                   {QStringLiteral("size"), double(info.fileSize)},
                                   {QStringLiteral("modified"), double(info.fileModifiedMs)}});
    const QJsonObject root{{QStringLiteral("version"), kIndexVersion}, {QStringLiteral("entries"), entries}};
    QSaveFile file(indexPath());
    if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(root).toJson(QJsonDocument::Compact)) < 0 || !file.commit()) {
        if (error) *error = file.errorString();
        return false;
    }
    return true;
}

void ConversationStore::rescan() {
    m_list.clear();
    m_unreadable.clear();
    m_parsedAtScan = 0;
    QHash<QString, ConversationInfo> indexed;
    for (const ConversationInfo& info : readIndex()) indexed.insert(info.id, info);
    bool stale = false;
    const QFileInfoList files = QDir(m_directory).entryInfoList({QStringLiteral("*") + kSuffix}, QDir::Files, QDir::Name);
    for (const QFileInfo& f : files) {
        const QString id = f.completeBaseName();
        const auto known = indexed.constFind(id);
        if (known != indexed.cend() && known->fileSize == f.size() && known->fileModifiedMs == f.lastModified().toMSecsSinceEpoch()) {
            m_list.append(*known);
            continue;
        }
        stale = true;
        ++m_parsedAtScan;
        QString error;
        std::optional<Conversation> c = Conversation::load(f.filePath(), &error);
        if (!c) {
            m_unreadable << QStringLiteral("%1: %2").arg(f.fileName(), error);
            continue;
        }
        if (!c->updated.isValid()) c->updated = f.lastModified();
        ConversationInfo info = infoOf(id, *c);
        info.fileSize = f.size();
        info.fileModifiedMs = f.lastModified().toMSecsSinceEpoch();
        m_list.append(info);
    }
    std::stable_sort(m_list.begin(), m_list.end(),
                     [](const ConversationInfo& a, const ConversationInfo& b) { return a.updated > b.updated; });
    if (stale || m_list.size() != indexed.size()) writeIndex();
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
    ConversationInfo info = infoOf(id, conversation);
    stampFile(info);
    upsert(info);
    indexChanged();
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
    Removed removed;
    if (m_trashLock) {
        QDir().mkpath(trashDir());
        QFile::remove(trashPath(id));
        if (!QFile::rename(pathOf(id), trashPath(id))) {
            if (error) *error = tr("Cannot move %1 to %2.").arg(pathOf(id), trashPath(id));
            return false;
        }
    } else {
        // No folder of our own that another instance would leave alone: Undo gets the bytes.
        QFile file(pathOf(id));
        if (!file.open(QIODevice::ReadOnly)) {
            if (error) *error = tr("Cannot read %1: %2").arg(pathOf(id), file.errorString());
            return false;
        }
        removed.bytes = file.readAll();
        if (file.error() != QFileDevice::NoError) {
            if (error) *error = tr("Cannot read %1: %2").arg(pathOf(id), file.errorString());
            return false;
        }
        file.close();
        if (!file.remove()) {
            if (error) *error = tr("Cannot delete %1: %2").arg(pathOf(id), file.errorString());
            return false;
        }
        removed.inMemory = true;
    }
    removed.info = m_list.takeAt(i);
    m_removed.append(removed);
    indexChanged();
    Q_EMIT changed();
    return true;
}

QString ConversationStore::lastRemovedTitle() const {
    return m_removed.isEmpty() ? QString() : m_removed.last().info.title;
}

QString ConversationStore::undoRemove(QString* error) {
    if (m_removed.isEmpty()) {
        if (error) *error = tr("Nothing was deleted.");
        return {};
    }
    const Removed& removed = m_removed.last();
    ConversationInfo info = removed.info;
    if (QFileInfo::exists(pathOf(info.id))) {
        if (error) *error = tr("Cannot bring %1 back: a file of that name exists.").arg(pathOf(info.id));
        return {};
    }
    if (removed.inMemory) {
        QSaveFile file(pathOf(info.id));
        if (!file.open(QIODevice::WriteOnly) || file.write(removed.bytes) != removed.bytes.size() || !file.commit()) {
            if (error) *error = tr("Cannot write %1: %2").arg(pathOf(info.id), file.errorString());
            return {};
        }
    } else if (!QFile::rename(trashPath(info.id), pathOf(info.id))) {
        if (error) *error = tr("Cannot move %1 back to %2.").arg(trashPath(info.id), pathOf(info.id));
        return {};
    }
    m_removed.removeLast();
    stampFile(info);  // a file written again has a new date: the index must not call it changed
    upsert(info);
    indexChanged();
    Q_EMIT changed();
    return info.id;
}
