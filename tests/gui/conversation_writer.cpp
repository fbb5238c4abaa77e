// Helper of test_crash_safety and test_conversation_store: a second process that uses the
// conversation store the way the app does, for the tests to kill (SIGKILL) at a random moment.
//   conversation_writer write DIR SETTINGS START   writes conversations c0..c2 in DIR and the settings
//       file SETTINGS (QSettings, INI) over and over, version START, START+1, ... Each version is
//       self-consistent (writer_content.h), so a reader can tell a complete file from a torn one.
//       Prints "ready" after the first version and then each version number.
//   conversation_writer trash DIR                   saves and deletes one conversation (it sits in this
//       instance's undo folder), prints "ready" and waits to be killed.
#include <QCoreApplication>
#include <QSettings>
#include <QThread>

#include <cstdio>

#include "conversation_store.h"
#include "writer_content.h"

namespace {

int writeLoop(const QString& dir, const QString& settingsPath, qint64 start) {
    ConversationStore store(dir);
    QSettings settings(settingsPath, QSettings::IniFormat);
    for (qint64 v = start;; ++v) {
        for (int k = 0; k < writer_content::kFiles; ++k) {
            QString error;
            if (!store.save(writer_content::fileId(k), writer_content::conversation(v, k), &error)) {
                std::fprintf(stderr, "save failed: %s\n", qPrintable(error));
                return 1;
            }
        }
        store.writeIndex();
        settings.setValue(QStringLiteral("version"), v);
        settings.setValue(QStringLiteral("blob"), writer_content::settingsBlob(v));
        settings.sync();
        if (settings.status() != QSettings::NoError) {
            std::fprintf(stderr, "settings sync failed\n");
            return 1;
        }
        std::printf(v == start ? "ready\n" : "%lld\n", static_cast<long long>(v));
        std::fflush(stdout);
    }
}

int holdTrash(const QString& dir) {
    ConversationStore store(dir);
    Conversation c;
    c.append({QStringLiteral("user"), QStringLiteral("deleted by the helper"), {}, {}});
    QString error;
    if (!store.save(QStringLiteral("helper"), c, &error) || !store.remove(QStringLiteral("helper"), &error)) {
        std::fprintf(stderr, "%s\n", qPrintable(error));
        return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) QThread::sleep(1);
}

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() == 5 && args[1] == QLatin1String("write")) return writeLoop(args[2], args[3], args[4].toLongLong());
    if (args.size() == 3 && args[1] == QLatin1String("trash")) return holdTrash(args[2]);
    std::fprintf(stderr, "usage: conversation_writer write DIR SETTINGS START | trash DIR\n");
    return 2;
}
