#include "model_downloader.h"

#include <QDir>
#include <QFileInfo>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QStorageInfo>

#include "engine_types.h"

namespace {

// Bytes of an existing .part hashed per event-loop turn on resume: the GUI stays responsive while a
// multi-gigabyte partial file is read again.
constexpr qint64 kRehashChunk = 4 << 20;
// A transfer that receives nothing for this long is ended (and can be resumed).
constexpr int kStallTimeoutMs = 60000;
const QByteArray kGgufMagic("GGUF");

bool isSha256Hex(const QString& s) {
    static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
    return hex.match(s).hasMatch();
}

QString sizeOrUnknown(qint64 bytes) { return bytes < 0 ? QObject::tr("an unknown size") : formatBytes(double(bytes)); }

// The first bytes of a rejected file, readable in a message ("<!DO" for a web page).
QString printable(const QByteArray& bytes) {
    QString s;
    for (char c : bytes) s += (c >= 0x20 && c < 0x7f) ? QChar::fromLatin1(c) : QChar(u'·');
    return s;
}

}  // namespace

ModelDownloader::ModelDownloader(QObject* parent)
    : QObject(parent), m_network(new QNetworkAccessManager(this)), m_freeSpace(&ModelDownloader::systemFreeSpace),
      m_remove(&ModelDownloader::systemRemove) {}

ModelDownloader::~ModelDownloader() { stopTransfer(); }

QString ModelDownloader::systemRemove(const QString& path) {
    QFile f(path);
    return f.remove() ? QString() : f.errorString();
}

qint64 ModelDownloader::systemFreeSpace(const QString& directory) {
    const QStorageInfo info(directory);
    return info.isValid() && info.isReady() ? info.bytesAvailable() : -1;
}

QString ModelDownloader::fileNameFromUrl(const QUrl& url) { return url.fileName(); }

void ModelDownloader::start(const QUrl& url, const QString& destination, const QString& expectedSha256) {
    if (isActive()) {
        Q_EMIT failed(tr("A download is already running (%1); cancel it first.").arg(m_destination));
        return;
    }
    ++m_job;
    m_url = url;
    m_destination = destination;
    m_expected = expectedSha256.trimmed().toLower();
    m_hash.reset();
    m_head.clear();
    m_offset = m_received = 0;
    m_total = -1;
    m_restarted = false;

    const QString scheme = url.scheme().toLower();
    if (!url.isValid() || url.host().isEmpty() || (scheme != QLatin1String("http") && scheme != QLatin1String("https")))
        return fail(tr("Only http:// and https:// addresses can be downloaded; “%1” is not one.").arg(url.toString()), PartFile::Keep);
    if (!m_expected.isEmpty() && !isSha256Hex(m_expected))
        return fail(tr("“%1” is not a SHA-256: it must be 64 hexadecimal digits (or empty to skip the check).").arg(expectedSha256),
                    PartFile::Keep);
    if (QFileInfo(destination).fileName().isEmpty())
        return fail(tr("Choose a file name for the download."), PartFile::Keep);
    if (QFileInfo::exists(destination))
        return fail(tr("%1 already exists and is never overwritten. Remove it first, or choose another name.").arg(destination),
                    PartFile::Keep);
    const QString dir = QFileInfo(destination).absolutePath();
    if (!QDir().mkpath(dir)) return fail(tr("Cannot create the folder %1.").arg(dir), PartFile::Keep);

    if (QFileInfo(partFile()).size() > 0) {
        // Resume: the bytes already on disk go through the hash first, a chunk per event-loop turn.
        m_file.setFileName(partFile());
        if (!m_file.open(QIODevice::ReadOnly))
            return fail(tr("Cannot read the partial download %1: %2.").arg(partFile(), m_file.errorString()), PartFile::Keep);
        m_phase = Phase::Rehashing;
        const quint64 job = m_job;
        QMetaObject::invokeMethod(this, [this, job] { rehashStep(job); }, Qt::QueuedConnection);
        return;
    }
    sendRequest();
}

void ModelDownloader::rehashStep(quint64 job) {
    // A cancel() or a new start() since this step was queued ends the chain.
    if (job != m_job || m_phase != Phase::Rehashing) return;
    const QByteArray chunk = m_file.read(kRehashChunk);
    if (chunk.isEmpty() && !m_file.atEnd())
        return fail(tr("Cannot read the partial download %1: %2.").arg(partFile(), m_file.errorString()), PartFile::Keep);
    m_hash.addData(chunk);
    if (m_head.size() < kGgufMagic.size()) m_head += chunk.left(kGgufMagic.size() - m_head.size());
    m_offset += chunk.size();
    if (!m_file.atEnd()) {
        QMetaObject::invokeMethod(this, [this, job] { rehashStep(job); }, Qt::QueuedConnection);
        return;
    }
    m_file.close();
    m_received = m_offset;
    sendRequest();
}

void ModelDownloader::sendRequest() {
    m_phase = Phase::Requesting;
    m_accepted = false;
    m_rangeNotSatisfiable = false;
    m_statusError.clear();
    QNetworkRequest request(m_url);
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    request.setTransferTimeout(kStallTimeoutMs);
    // Sizes and byte ranges must count the file's own bytes, not those of a compressed rendering
    // (and setting the header also stops Qt from inflating on the fly).
    request.setRawHeader("Accept-Encoding", "identity");
    if (m_offset > 0) request.setRawHeader("Range", "bytes=" + QByteArray::number(m_offset) + '-');
    m_reply = m_network->get(request);
    connect(m_reply, &QNetworkReply::readyRead, this, &ModelDownloader::handleReadyRead);
    connect(m_reply, &QNetworkReply::finished, this, &ModelDownloader::handleFinished);
}

// Called once per response, before its first byte is used: checks the status, decides between
// appending (206) and starting over (200), checks the free space, and opens the .part. False when
// the response cannot be used (m_statusError is set, or it failed already).
bool ModelDownloader::acceptResponse() {
    m_accepted = true;
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status == 0) return true;  // no HTTP answer at all: handleFinished() reports the network error
    if (status == 416) {
        m_rangeNotSatisfiable = true;
        return true;
    }
    // An error status is reported when the reply finishes (Qt records its own error for it then; an
    // abort before that would make two); its body, an error page, is dropped meanwhile.
    if (status >= 300 && status < 400) {
        m_statusError = tr("%1 redirects to %2, which is not followed: a redirect may not go from https to http.")
                            .arg(m_url.toString(), m_reply->header(QNetworkRequest::LocationHeader).toUrl().toString());
        return false;
    }
    if (status >= 400) {
        const QString reason = m_reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString();
        m_statusError = tr("The server answered “%1 %2” for %3.").arg(status).arg(reason, m_url.toString());
        return false;
    }
    const QVariant lengthHeader = m_reply->header(QNetworkRequest::ContentLengthHeader);
    const qint64 length = lengthHeader.isValid() ? lengthHeader.toLongLong() : -1;
    // Anything but 206 is the whole file: a server that ignores Range is answered by starting over.
    const bool restart = status != 206 && m_offset > 0;
    qint64 needed = length;
    if (status == 206) {
        if (!acceptRangeAnswer(length)) return false;
    } else {
        m_total = length;
        if (restart && length >= 0) needed = length - m_offset;  // truncating the .part frees its bytes
    }
    const QString dir = QFileInfo(m_destination).absolutePath();
    const qint64 free = m_freeSpace ? m_freeSpace(dir) : -1;
    if (needed > 0 && free >= 0 && needed > free) {
        // Exact bytes when the rounded sizes would read the same.
        QString need = formatBytes(double(needed));
        QString have = formatBytes(double(free));
        if (need == have) {
            need = tr("%1 bytes").arg(needed);
            have = tr("%1 bytes").arg(free);
        }
        fail(tr("Not enough disk space in %1: the download needs %2 more, but only %3 are free. Free some space and try again.")
                 .arg(dir, need, have),
             PartFile::Keep);
        return false;
    }
    if (restart) {
        m_offset = m_received = 0;
        m_hash.reset();
        m_head.clear();
    }
    // Unbuffered: a failing write (disk full) shows in the write() call that caused it.
    m_file.setFileName(partFile());
    if (!m_file.open(QIODevice::WriteOnly | QIODevice::Unbuffered | (restart ? QIODevice::Truncate : QIODevice::Append))) {
        fail(tr("Cannot write %1: %2.").arg(partFile(), m_file.errorString()), PartFile::Keep);
        return false;
    }
    Q_EMIT transferStarted(m_offset);
    Q_EMIT progress(m_received, m_total);
    return true;
}

bool ModelDownloader::acceptRangeAnswer(qint64 contentLength) {
    // Content-Range: bytes FIRST-LAST/TOTAL (TOTAL is "*" when the server does not know it).
    static const QRegularExpression re(QStringLiteral("^\\s*bytes\\s+(\\d+)-(\\d+)/(\\d+|\\*)\\s*$"));
    const QString range = QString::fromLatin1(m_reply->rawHeader("Content-Range"));
    const QRegularExpressionMatch match = re.match(range);
    if (!match.hasMatch() || match.captured(1).toLongLong() != m_offset) {
        fail(tr("The server sent the wrong part of the file (Content-Range “%1” when asked for byte %2 on). "
                "Remove the partial download and start again.")
                 .arg(range)
                 .arg(m_offset),
             PartFile::Keep);
        return false;
    }
    m_total = match.captured(3) == QLatin1String("*") ? (contentLength >= 0 ? m_offset + contentLength : -1)
                                                       : match.captured(3).toLongLong();
    return true;
}

void ModelDownloader::handleReadyRead() {
    if (!m_accepted) acceptResponse();
    if (m_phase == Phase::Idle) return;  // acceptResponse() failed (and said so)
    const QByteArray data = m_reply->readAll();
    // The body of a 416 or of an error status is an error page, not part of the file.
    if (m_rangeNotSatisfiable || !m_statusError.isEmpty() || data.isEmpty()) return;
    if (m_head.size() < kGgufMagic.size()) {
        m_head += data.left(kGgufMagic.size() - m_head.size());
        // Said as soon as the first bytes show it, not after downloading a whole web page.
        if (!kGgufMagic.startsWith(m_head)) {
            fail(tr("%1 is not a GGUF model: it starts with “%2” instead of “GGUF”. Check the address (it may be a web page "
                    "about the file rather than the file).")
                     .arg(m_url.toString(), printable(m_head)),
                 PartFile::Remove);
            return;
        }
    }
    // A short write is retried: only the call that writes nothing carries the system's reason
    // (disk full, file too large), and that is what the message should name.
    qint64 written = 0;
    while (written < data.size()) {
        const qint64 n = m_file.write(data.constData() + written, data.size() - written);
        if (n <= 0) break;
        written += n;
    }
    if (written != data.size()) {
        const QString why = m_file.errorString();
        fail(tr("Could not write to %1: %2. Is the disk full?%3").arg(partFile(), why, keptNote()), PartFile::Keep);
        return;
    }
    m_hash.addData(data);
    m_received += data.size();
    Q_EMIT progress(m_received, m_total);
}

void ModelDownloader::handleFinished() {
    if (!m_accepted) acceptResponse();
    if (m_phase == Phase::Idle) return;
    if (!m_statusError.isEmpty()) return fail(m_statusError, PartFile::Keep);
    if (m_rangeNotSatisfiable) return handleRangeNotSatisfiable();
    if (m_reply->bytesAvailable() > 0) handleReadyRead();
    if (m_phase == Phase::Idle) return;  // the last bytes failed (and said so)
    if (m_reply->error() != QNetworkReply::NoError) {
        const QString why = m_reply->errorString();
        if (m_received == 0)
            return fail(tr("Could not download %1: %2.").arg(m_url.toString(), why), PartFile::Keep);
        return fail(tr("The download stopped after %1 of %2: %3.%4").arg(formatBytes(double(m_received)), sizeOrUnknown(m_total), why, keptNote()),
                    PartFile::Keep);
    }
    if (m_total >= 0 && m_received != m_total)
        return fail(tr("The connection ended after %1 of %2.%3").arg(formatBytes(double(m_received)), sizeOrUnknown(m_total), keptNote()),
                    PartFile::Keep);
    complete();
}

void ModelDownloader::handleRangeNotSatisfiable() {
    // Nothing exists after byte N: either the .part already holds the whole file (it arrived, but the
    // app stopped before the rename), or the file on the server is shorter than the .part.
    static const QRegularExpression re(QStringLiteral("/(\\d+)\\s*$"));
    const QRegularExpressionMatch match = re.match(QString::fromLatin1(m_reply->rawHeader("Content-Range")));
    const qint64 total = match.hasMatch() ? match.captured(1).toLongLong() : m_offset;
    if (total == m_offset) {
        m_total = m_offset;
        return complete();
    }
    if (m_restarted)
        return fail(tr("The server reports %1 for %2, which does not match what it sent.").arg(formatBytes(double(total)), m_url.toString()),
                    PartFile::Remove);
    restartFromZero();
}

void ModelDownloader::restartFromZero() {
    stopTransfer();
    m_restarted = true;
    QFile::remove(partFile());
    m_offset = m_received = 0;
    m_total = -1;
    m_hash.reset();
    m_head.clear();
    sendRequest();
}

void ModelDownloader::complete() {
    stopTransfer();
    const QString name = QFileInfo(m_destination).fileName();
    if (m_head != kGgufMagic)
        return fail(tr("%1 is not a GGUF model: it starts with “%2” instead of “GGUF”.").arg(m_url.toString(), printable(m_head)),
                    PartFile::Remove);
    const QString sha = QString::fromLatin1(m_hash.result().toHex());
    if (!m_expected.isEmpty() && sha != m_expected)
        return fail(tr("The SHA-256 of %1 does not match: expected %2, got %3.").arg(name, m_expected, sha), PartFile::Remove);
    // QFile::rename never replaces an existing file: a file of that name that appeared meanwhile stays.
    if (QFileInfo::exists(m_destination))
        return fail(tr("%1 appeared while downloading and is not overwritten; the download is kept as %2.").arg(m_destination, partFile()),
                    PartFile::Keep);
    QFile part(partFile());
    if (!part.rename(m_destination))
        return fail(tr("Cannot rename %1 to %2: %3.").arg(partFile(), name, part.errorString()), PartFile::Keep);
    m_phase = Phase::Idle;
    Q_EMIT finished(m_destination, sha);
}

void ModelDownloader::cancel() {
    if (!isActive()) return;
    stopTransfer();
    ++m_job;
    m_phase = Phase::Idle;
    const qint64 kept = QFileInfo(partFile()).size();
    if (kept == 0) QFile::remove(partFile());
    Q_EMIT canceled(partFile(), kept);
}

QString ModelDownloader::keptNote() const {
    const qint64 kept = QFileInfo(partFile()).size();
    return kept > 0 ? tr(" The %1 received so far are kept in %2; press Resume to continue.").arg(formatBytes(double(kept)), partFile())
                    : QString();
}

void ModelDownloader::fail(const QString& error, PartFile part) {
    stopTransfer();
    ++m_job;
    m_phase = Phase::Idle;
    // An empty .part holds nothing worth resuming. A file that should go but stays is said: the user
    // was promised that a download that failed its checks is not kept.
    QString text = error;
    if (!m_destination.isEmpty() && QFileInfo::exists(partFile()) && (part == PartFile::Remove || QFileInfo(partFile()).size() == 0)) {
        const QString removeError = m_remove(partFile());
        if (!removeError.isEmpty())
            text += QLatin1Char(' ') + tr("The downloaded file %1 could not be deleted (%2): delete it by hand.").arg(partFile(), removeError);
        else if (part == PartFile::Remove)
            text += QLatin1Char(' ') + tr("The downloaded file was removed.");
    }
    Q_EMIT failed(text);
}

void ModelDownloader::stopTransfer() {
    if (m_reply) {
        // Disconnected first: abort() emits finished() synchronously, and this is not a failure.
        disconnect(m_reply, nullptr, this, nullptr);
        // A reply that already failed (an HTTP error status) must not be aborted again; deleting it
        // ends its transfer.
        if (m_reply->isRunning() && m_reply->error() == QNetworkReply::NoError) m_reply->abort();
        m_reply->deleteLater();
        m_reply = nullptr;
    }
    if (m_file.isOpen()) m_file.close();
}
