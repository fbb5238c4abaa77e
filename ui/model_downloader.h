#pragma once
// Downloads one GGUF file over http(s) into the model cache.
//
// The bytes go to `<destination>.part`, which is renamed to the destination only once everything has
// arrived, the file starts with the GGUF magic and (when one was given) the SHA-256 matches; an
// existing destination is never overwritten. A .part left by an interruption, a cancel or a write
// error is resumed with `Range: bytes=N-` (its bytes are hashed again first, so the final hash covers
// the whole file); a server that ignores the range is answered by starting over from byte 0.
//
// Before the first byte is written, the size the server announces is checked against the free space
// of the destination's file system. The free-space query is injectable so tests can simulate a full
// disk. Every failure is reported once, through failed(), as a sentence a user can act on.
#include <QCryptographicHash>
#include <QFile>
#include <QObject>
#include <QUrl>
#include <functional>

class QNetworkAccessManager;
class QNetworkReply;

class ModelDownloader : public QObject {
    Q_OBJECT

public:
    // Bytes available to this user in `directory`; negative when unknown (the check is skipped).
    using FreeSpaceFunction = std::function<qint64(const QString& directory)>;
    // Deletes `path`; returns why it could not (empty: it is gone). Tests replace it to make it fail.
    using RemoveFunction = std::function<QString(const QString& path)>;

    explicit ModelDownloader(QObject* parent = nullptr);
    // Aborts a running download; its .part stays for a later resume.
    ~ModelDownloader() override;

    void setFreeSpaceFunction(FreeSpaceFunction f) { m_freeSpace = std::move(f); }
    static qint64 systemFreeSpace(const QString& directory);
    void setRemoveFunction(RemoveFunction f) { m_remove = std::move(f); }
    static QString systemRemove(const QString& path);

    static QString partPath(const QString& destination) { return destination + QStringLiteral(".part"); }
    // The last path segment of the URL ("model.gguf"); empty when the URL ends in '/'.
    static QString fileNameFromUrl(const QUrl& url);

    bool isActive() const { return m_phase != Phase::Idle; }
    QString destination() const { return m_destination; }

public Q_SLOTS:
    // Downloads `url` to `destination` (a full path), resuming from `destination`.part when it exists.
    // `expectedSha256` (64 hex digits, any case) is optional. The outcome is one of finished(),
    // failed() or canceled(); a bad argument fails at once, from inside this call.
    void start(const QUrl& url, const QString& destination, const QString& expectedSha256 = QString());
    // Stops the transfer and keeps the .part (when it holds anything) so start() can resume it.
    void cancel();

Q_SIGNALS:
    // `offset` is where this transfer starts (0 for a fresh download, the .part's size on resume).
    void transferStarted(qint64 offset);
    // Bytes in the .part so far and the whole file's size (-1 while unknown).
    void progress(qint64 received, qint64 total);
    void finished(const QString& path, const QString& sha256);
    void failed(const QString& error);
    void canceled(const QString& partPath, qint64 bytesKept);

private:
    enum class Phase { Idle, Rehashing, Requesting };
    enum class PartFile { Keep, Remove };

    void rehashStep(quint64 job);
    void sendRequest();
    bool acceptResponse();
    bool acceptRangeAnswer(qint64 contentLength);
    void handleReadyRead();
    void handleFinished();
    void handleRangeNotSatisfiable();
    void complete();
    void restartFromZero();
    void fail(const QString& error, PartFile part);
    void stopTransfer();
    QString partFile() const { return partPath(m_destination); }
    QString keptNote() const;

    QNetworkAccessManager* m_network;
    QNetworkReply* m_reply = nullptr;
    FreeSpaceFunction m_freeSpace;
    RemoveFunction m_remove;
    Phase m_phase = Phase::Idle;
    quint64 m_job = 0;               // a new start() or a cancel() ends the previous rehash chain

    QUrl m_url;
    QString m_destination;
    QString m_expected;              // lower-case hex, or empty
    QFile m_file;                    // the .part, open for appending once the response is accepted
    QCryptographicHash m_hash{QCryptographicHash::Sha256};
    QByteArray m_head;               // the file's first bytes (up to 4), for the GGUF magic check
    qint64 m_offset = 0;             // bytes of the .part that the current request does not fetch
    qint64 m_received = 0;           // bytes in the .part
    qint64 m_total = -1;             // the whole file's size, when the server said
    bool m_accepted = false;         // the current response's status and headers were checked
    bool m_rangeNotSatisfiable = false;
    QString m_statusError;           // an HTTP error status, reported when the reply finishes
    bool m_restarted = false;        // one restart from byte 0 per start(), never a loop
};
