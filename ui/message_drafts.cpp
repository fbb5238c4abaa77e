#include "message_drafts.h"

#include <QDir>
#include <QFileInfo>
#include <QLockFile>
#include <QSettings>
#include <QStringList>
#include <QUuid>

#include "app_settings.h"

namespace {

// Beside the settings file, where the drafts are.
QString lockDir() {
    return QDir(QFileInfo(QSettings().fileName()).absolutePath()).filePath(QStringLiteral("drafts"));
}

std::unique_ptr<QLockFile> lockOf(const QString& name) {
    auto lock = std::make_unique<QLockFile>(QDir(lockDir()).filePath(name + QStringLiteral(".lock")));
    // Stale only when the process that holds it has gone (never by age: a window stays open for days).
    lock->setStaleLockTime(0);
    return lock;
}

}  // namespace

MessageDrafts::MessageDrafts() : m_name(QUuid::createUuid().toString(QUuid::Id128).left(12)) {
    QDir().mkpath(lockDir());
    m_lock = lockOf(m_name);
    if (!m_lock->tryLock(0)) m_lock.reset();
}

MessageDrafts::~MessageDrafts() = default;

bool MessageDrafts::ownsLock() const { return m_lock != nullptr; }

QString MessageDrafts::adopt() {
    // One window adopts at a time: two starting together would both take the same quit window's text.
    // Bounded: a window hung while adopting must not keep this one from starting (at worst a text is
    // taken over twice, never lost).
    const std::unique_ptr<QLockFile> adopting = lockOf(QStringLiteral(".adopting"));
    adopting->tryLock(2000);
    QStringList texts;
    const QString legacy = AppSettings::legacyMessageDraft();
    if (!legacy.isEmpty()) texts << legacy;
    QStringList adopted;
    std::vector<std::unique_ptr<QLockFile>> held;  // released (and removed) once the drafts are gone
    for (const QString& owner : AppSettings::draftOwners()) {
        if (owner == m_name) continue;
        std::unique_ptr<QLockFile> lock = lockOf(owner);
        if (!lock->tryLock(0)) continue;  // that window is running
        const QString text = AppSettings::messageDraft(owner);
        if (!text.isEmpty()) texts << text;
        adopted << owner;
        held.push_back(std::move(lock));
    }
    const QString joined = texts.join(QStringLiteral("\n\n"));
    AppSettings::setMessageDraft(m_name, joined);
    for (const QString& owner : adopted) AppSettings::setMessageDraft(owner, QString());
    if (!legacy.isEmpty()) AppSettings::clearLegacyMessageDraft();
    return joined;
}

void MessageDrafts::save(const QString& text) { AppSettings::setMessageDraft(m_name, text); }
