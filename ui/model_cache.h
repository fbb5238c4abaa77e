#pragma once
// The model cache as the Models dialog sees it: every *.gguf in wb::models_dir() with its size,
// architecture and quantization (read from the GGUF header with core/gguf), its SHA-256, and the
// partial downloads (*.part) that can be resumed or removed.
//
// Hashing a model reads the whole file (seconds for a few GB), so it runs on a private one-thread pool
// and results arrive as hashReady(); they are remembered per (path, size, modification time) in memory
// and in QSettings, so reopening the dialog or restarting the app does not hash the same file again.
// Whether WhiteBox can run a file (wb::Model::check: it builds the tokenizer, about 0.5 s for Gemma 3's
// 262k tokens) is decided on a pool of its own, so it waits neither for a hash nor keeps the GUI
// thread; the verdict arrives as checkReady() and is remembered per (path, size, modification time).
#include <QDateTime>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QThreadPool>
#include <QVector>
#include <atomic>
#include <memory>

namespace wb {
class GgufFile;
}

struct CachedModel {
    QString path;
    QString fileName;
    qint64 size = 0;
    QDateTime modified;
    bool partial = false;  // an unfinished download (*.part): resumable, not loadable
    QString arch;          // general.architecture
    QString quant;         // the file type (general.file_type), else the dominant weight type
    QString error;         // why the header could not be read; empty when it could
    bool checked = false;  // the verdict below is known (it is decided off the GUI thread)
    QString unsupported;   // why WhiteBox cannot run the file (wb::Model::check); empty when it can
    QString sha256;        // lower-case hex; empty until hashed (never for partial downloads)
};

class ModelCache : public QObject {
    Q_OBJECT

public:
    explicit ModelCache(QObject* parent = nullptr);
    // Stops a running hash between two reads and waits for it.
    ~ModelCache() override;

    // wb::models_dir(), read again on every refresh ($WHITEBOX_MODELS may change in tests).
    QString directory() const { return m_directory; }
    const QVector<CachedModel>& models() const { return m_models; }
    const CachedModel* find(const QString& path) const;
    bool hasCompleteModels() const;
    // True while hashes are queued or running.
    bool isHashing() const { return !m_pending.isEmpty(); }
    // True while Model::check verdicts are queued or running.
    bool isChecking() const { return !m_pendingChecks.isEmpty(); }

    // "Q4_K_M" from general.file_type, else the type holding most weight bytes, else "".
    static QString quantizationOf(const wb::GgufFile& file);

public Q_SLOTS:
    // Lists the directory again, reads the headers of new or changed files and queues the hashes
    // that are not known yet. Emits changed().
    void refresh();

Q_SIGNALS:
    void changed();
    void hashReady(const QString& path, const QString& sha256);
    // The file's CachedModel now has its verdict (checked, unsupported).
    void checkReady(const QString& path);

private:
    struct Header {
        qint64 size = 0;
        QDateTime modified;
        QString arch;
        QString quant;
        QString error;
        bool checked = false;
        QString unsupported;
    };
    void readHeader(CachedModel& m);
    void queueHash(const CachedModel& m);
    void queueCheck(const CachedModel& m);
    void handleChecked(const QString& path, qint64 size, const QDateTime& modified, const QString& unsupported);
    void handleHashed(const QString& path, qint64 size, const QDateTime& modified, const QString& sha256);
    QString knownHash(const CachedModel& m) const;

    QString m_directory;
    QVector<CachedModel> m_models;
    QHash<QString, Header> m_headers;  // by path; reused while size and mtime are unchanged
    QSet<QString> m_pending;           // paths queued or being hashed
    QSet<QString> m_pendingChecks;     // paths queued or being checked
    QThreadPool m_pool;
    QThreadPool m_checkPool;
    std::shared_ptr<std::atomic<bool>> m_stop = std::make_shared<std::atomic<bool>>(false);
};
