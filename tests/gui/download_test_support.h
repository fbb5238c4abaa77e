#pragma once
// Shared by the downloader and Models dialog tests: small GGUF files written with core/gguf's writer,
// and a tiny HTTP/1.1 server on 127.0.0.1 (QTcpServer, any free port) whose misbehaviours are knobs:
// ignore Range, drop the connection after N body bytes, send slowly, 404, redirect. It records every
// request (its Range header and how many body bytes it was sent) so tests can prove what travelled.
#include <QByteArray>
#include <QCryptographicHash>
#include <QFile>
#include <QHash>
#include <QHostAddress>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <QUrl>
#include <QVector>
#include <memory>
#include <random>

#include "gguf/gguf_writer.h"

namespace wb_download_test {

struct GgufSpec {
    std::string arch = "llama";
    int fileType = -1;                 // general.file_type; -1 = absent
    wb::GgmlType type = wb::GgmlType::Q4_0;
    int tensors = 4;                   // 2-D weights of `type`, [512 x 256] each, plus one 1-D F32 norm
    uint32_t seed = 1;
};

// Writes the file and returns its bytes. Q4_0 with the defaults: about 300 KB.
inline QByteArray writeGguf(const QString& path, const GgufSpec& spec = {}) {
    wb::GgufWriter w;
    w.set_string("general.architecture", spec.arch);
    w.set_string("general.name", "download-test");
    if (spec.fileType >= 0) w.set_u32("general.file_type", uint32_t(spec.fileType));
    auto fill = [seed = spec.seed](uint64_t bytes, uint32_t salt) {
        return [bytes, seed, salt](uint8_t* dst) {
            std::mt19937 rng(seed * 7919u + salt);
            for (uint64_t i = 0; i < bytes; ++i) dst[i] = uint8_t(rng());
        };
    };
    const std::vector<int64_t> ne = {512, 256};
    for (int i = 0; i < spec.tensors; ++i)
        w.add_tensor("blk." + std::to_string(i) + ".weight", spec.type, ne, fill(wb::GgufWriter::tensor_bytes(spec.type, ne), uint32_t(i)));
    w.add_tensor("output_norm.weight", wb::GgmlType::F32, {512}, fill(512 * 4, 999));
    w.write(QFile::encodeName(path).toStdString());
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

inline QString sha256Hex(const QByteArray& bytes) {
    return QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
}

inline QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

class LocalHttpServer : public QObject {
public:
    struct Request {
        QByteArray method;
        QByteArray path;
        QByteArray range;        // the Range header as sent, empty when none
        int status = 0;
        qint64 bodyBytesSent = 0;
    };

    bool honourRange = true;
    qint64 dropAfter = -1;       // the next response is cut after this many body bytes (once)
    qint64 bytesPerTick = 0;     // throttle: body bytes per 10 ms; 0 = everything at once

    LocalHttpServer() {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* socket = m_server.nextPendingConnection()) accept(socket);
        });
    }

    bool listen() { return m_server.listen(QHostAddress::LocalHost, 0); }
    QUrl url(const QString& path) const { return QUrl(QStringLiteral("http://127.0.0.1:%1%2").arg(m_server.serverPort()).arg(path)); }
    void serve(const QString& path, const QByteArray& body) { m_files.insert(path.toLatin1(), body); }
    void redirect(const QString& from, const QString& to) { m_redirects.insert(from.toLatin1(), to); }
    const QVector<Request>& requests() const { return m_requests; }

private:
    void accept(QTcpSocket* socket) {
        auto head = std::make_shared<QByteArray>();
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        connect(socket, &QTcpSocket::readyRead, socket, [this, socket, head] {
            if (head->endsWith("\r\n\r\n")) return;  // one request per connection
            head->append(socket->readAll());
            const qsizetype end = head->indexOf("\r\n\r\n");
            if (end < 0) return;
            head->truncate(end + 4);
            respond(socket, *head);
        });
    }

    void respond(QTcpSocket* socket, const QByteArray& head) {
        const QList<QByteArray> lines = head.split('\n');
        const QList<QByteArray> requestLine = lines.value(0).trimmed().split(' ');
        Request r;
        r.method = requestLine.value(0);
        r.path = requestLine.value(1);
        for (const QByteArray& line : lines)
            if (line.toLower().startsWith("range:")) r.range = line.mid(6).trimmed();

        QByteArray body;
        QByteArray extra;
        if (m_redirects.contains(r.path)) {
            r.status = 302;
            extra = "Location: " + url(m_redirects.value(r.path)).toEncoded() + "\r\n";
        } else if (!m_files.contains(r.path)) {
            r.status = 404;
            body = "no such file\n";
        } else {
            body = m_files.value(r.path);
            r.status = 200;
            if (honourRange && r.range.startsWith("bytes=") && r.range.endsWith('-')) {
                const qint64 from = r.range.mid(6, r.range.size() - 7).toLongLong();
                const qint64 size = body.size();
                if (from >= size) {
                    r.status = 416;
                    extra = "Content-Range: bytes */" + QByteArray::number(size) + "\r\n";
                    body.clear();
                } else {
                    r.status = 206;
                    extra = "Content-Range: bytes " + QByteArray::number(from) + '-' + QByteArray::number(size - 1) + '/' +
                            QByteArray::number(size) + "\r\n";
                    body = body.mid(from);
                }
            }
        }
        static const QHash<int, QByteArray> reasons = {
            {200, "OK"}, {206, "Partial Content"}, {302, "Found"}, {404, "Not Found"}, {416, "Range Not Satisfiable"}};
        socket->write("HTTP/1.1 " + QByteArray::number(r.status) + ' ' + reasons.value(r.status) + "\r\nContent-Length: " +
                      QByteArray::number(body.size()) + "\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n" + extra +
                      "\r\n");
        if (r.method == "HEAD") body.clear();
        qint64 limit = body.size();
        if (dropAfter >= 0) {
            limit = qMin(limit, dropAfter);
            dropAfter = -1;
        }
        const qsizetype index = m_requests.size();
        m_requests << r;
        if (bytesPerTick <= 0) {
            socket->write(body.left(limit));
            m_requests[index].bodyBytesSent = limit;
            socket->disconnectFromHost();
            return;
        }
        auto* timer = new QTimer(socket);
        auto sent = std::make_shared<qint64>(0);
        connect(timer, &QTimer::timeout, socket, [this, socket, timer, body, limit, index, sent] {
            if (socket->state() != QAbstractSocket::ConnectedState) return timer->stop();
            const qint64 n = qMin(bytesPerTick > 0 ? bytesPerTick : limit, limit - *sent);
            socket->write(body.mid(*sent, n));
            *sent += n;
            m_requests[index].bodyBytesSent = *sent;
            if (*sent >= limit) {
                timer->stop();
                socket->disconnectFromHost();
            }
        });
        timer->start(10);
    }

    QTcpServer m_server;
    QHash<QByteArray, QByteArray> m_files;
    QHash<QByteArray, QString> m_redirects;
    QVector<Request> m_requests;
};

}  // namespace wb_download_test
