#include "model_cache.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QVariantMap>
#include <algorithm>
#include <exception>
#include <map>

#include "engine/model.h"
#include "gguf/gguf_file.h"
#include "model/model_paths.h"

namespace {

// QSettings key of the remembered hashes: path -> "size|mtime in ms|sha256".
const QString kHashesKey = QStringLiteral("modelCache/sha256");
// Bytes per read while hashing: the stop flag is checked between reads, so closing the dialog ends a
// multi-gigabyte hash within milliseconds.
constexpr qint64 kHashChunk = 4 << 20;
// llama.cpp marks a file type it guessed (instead of read) with this bit.
constexpr int64_t kFileTypeGuessed = 1024;

// Names of general.file_type (llama.cpp's llama_ftype): unlike the tensor types, they tell the mix
// apart (Q4_K_M and Q4_K_S store the same block types in different tensors).
QString fileTypeName(int64_t ftype) {
    static const std::map<int64_t, const char*> names = {
        {0, "F32"},      {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},     {7, "Q8_0"},    {8, "Q5_0"},
        {9, "Q5_1"},     {10, "Q2_K"},    {11, "Q3_K_S"},  {12, "Q3_K_M"},  {13, "Q3_K_L"}, {14, "Q4_K_S"},
        {15, "Q4_K_M"},  {16, "Q5_K_S"},  {17, "Q5_K_M"},  {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},
        {21, "Q2_K_S"},  {22, "IQ3_XS"},  {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},
        {27, "IQ3_M"},   {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},  {31, "IQ1_M"},  {32, "BF16"},
        {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"},
    };
    const auto it = names.find(ftype);
    return it == names.end() ? QString() : QString::fromLatin1(it->second);
}

// Empty when the file cannot be read or `stop` was raised.
QString sha256OfFile(const QString& path, const std::atomic<bool>& stop) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    while (!file.atEnd()) {
        if (stop) return {};
        const QByteArray chunk = file.read(kHashChunk);
        if (chunk.isEmpty()) return {};
        hash.addData(chunk);
    }
    return QString::fromLatin1(hash.result().toHex());
}

QString hashRecord(qint64 size, const QDateTime& modified, const QString& sha256) {
    return QStringLiteral("%1|%2|%3").arg(size).arg(modified.toMSecsSinceEpoch()).arg(sha256);
}

}  // namespace

ModelCache::ModelCache(QObject* parent) : QObject(parent) {
    // One file at a time: parallel hashes of files on the same disk only compete for it.
    m_pool.setMaxThreadCount(1);
    m_checkPool.setMaxThreadCount(1);
    m_directory = QString::fromStdString(wb::models_dir());
}

ModelCache::~ModelCache() {
    *m_stop = true;
    m_pool.clear();
    m_checkPool.clear();
    m_pool.waitForDone();
    // A running check cannot be interrupted: at most one (under a second) is waited for.
    m_checkPool.waitForDone();
}

const CachedModel* ModelCache::find(const QString& path) const {
    for (const CachedModel& m : m_models)
        if (m.path == path) return &m;
    return nullptr;
}

bool ModelCache::hasCompleteModels() const {
    for (const CachedModel& m : m_models)
        if (!m.partial) return true;
    return false;
}

QString ModelCache::quantizationOf(const wb::GgufFile& file) {
    if (const wb::GgufValue* v = file.find("general.file_type"); v && v->is_integer()) {
        const QString name = fileTypeName(v->i & ~kFileTypeGuessed);
        if (!name.isEmpty()) return name;
    }
    // No (or an unknown) file type: name the type that holds most of the weights. One-dimensional
    // tensors (norms, biases) are F32 in every file and say nothing about the quantization.
    std::map<uint32_t, uint64_t> bytes;
    for (const wb::GgufTensor& t : file.tensors())
        if (t.n_dims >= 2) bytes[uint32_t(t.type)] += t.n_bytes;
    uint32_t best = 0;
    uint64_t bestBytes = 0;
    for (const auto& [type, n] : bytes)
        if (n > bestBytes) {
            best = type;
            bestBytes = n;
        }
    return bestBytes == 0 ? QString() : QString::fromStdString(wb::ggml_type_name(wb::GgmlType(best)));
}

void ModelCache::refresh() {
    m_directory = QString::fromStdString(wb::models_dir());
    const QFileInfoList files =
        QDir(m_directory).entryInfoList({QStringLiteral("*.gguf"), QStringLiteral("*.part")}, QDir::Files, QDir::Name);
    QVector<CachedModel> models;
    for (const QFileInfo& fi : files) {
        CachedModel m;
        m.path = fi.absoluteFilePath();
        m.fileName = fi.fileName();
        m.size = fi.size();
        m.modified = fi.lastModified();
        m.partial = fi.suffix() == QLatin1String("part");
        if (!m.partial) {
            readHeader(m);
            m.sha256 = knownHash(m);
        }
        models << m;
    }
    m_models = models;
    for (const CachedModel& m : std::as_const(m_models)) {
        if (!m.partial && m.sha256.isEmpty()) queueHash(m);
        if (!m.partial && !m.checked) queueCheck(m);
    }
    Q_EMIT changed();
}

void ModelCache::readHeader(CachedModel& m) {
    auto it = m_headers.find(m.path);
    if (it == m_headers.end() || it->size != m.size || it->modified != m.modified) {
        Header h;
        h.size = m.size;
        h.modified = m.modified;
        try {
            // Maps the file and parses the header only; the tensor data is not read.
            const auto file = wb::GgufFile::open(QFile::encodeName(m.path).toStdString());
            h.arch = QString::fromStdString(file->get_string("general.architecture").value_or(std::string()));
            h.quant = quantizationOf(*file);
        } catch (const std::exception& e) {
            h.error = QString::fromStdString(e.what());
            h.checked = true;  // unreadable: nothing to check, the error says why it cannot run
        }
        it = m_headers.insert(m.path, h);
    }
    m.arch = it->arch;
    m.quant = it->quant;
    m.error = it->error;
    m.checked = it->checked;
    m.unsupported = it->unsupported;
}

QString ModelCache::knownHash(const CachedModel& m) const {
    const QString record = QSettings().value(kHashesKey).toMap().value(m.path).toString();
    const QString prefix = hashRecord(m.size, m.modified, QString());
    return record.startsWith(prefix) ? record.mid(prefix.size()) : QString();
}

void ModelCache::queueHash(const CachedModel& m) {
    if (m_pending.contains(m.path)) return;
    m_pending.insert(m.path);
    const QString path = m.path;
    const qint64 size = m.size;
    const QDateTime modified = m.modified;
    const auto stop = m_stop;
    m_pool.start([this, stop, path, size, modified] {
        const QString sha = sha256OfFile(path, *stop);
        if (*stop) return;
        // Queued into the GUI thread; the destructor waits for this job, so `this` is alive here,
        // and a call still queued when it is destroyed is dropped with it.
        QMetaObject::invokeMethod(this, [this, path, size, modified, sha] { handleHashed(path, size, modified, sha); },
                                  Qt::QueuedConnection);
    });
}

// Architecture, hyperparameters, tensors and tokenizer, as loading would check them (no weights are
// read), on the check pool: the dialog says which files can run before anyone tries.
void ModelCache::queueCheck(const CachedModel& m) {
    if (m_pendingChecks.contains(m.path)) return;
    m_pendingChecks.insert(m.path);
    const QString path = m.path;
    const qint64 size = m.size;
    const QDateTime modified = m.modified;
    const auto stop = m_stop;
    m_checkPool.start([this, stop, path, size, modified] {
        QString unsupported;
        try {
            const auto file = wb::GgufFile::open(QFile::encodeName(path).toStdString());
            unsupported = QString::fromStdString(wb::Model::check(*file));
        } catch (const std::exception& e) {
            unsupported = QString::fromStdString(e.what());  // changed or gone since its header was read
        }
        if (*stop) return;
        // As in queueHash: the destructor waits for this job, and a call still queued dies with `this`.
        QMetaObject::invokeMethod(
            this, [this, path, size, modified, unsupported] { handleChecked(path, size, modified, unsupported); },
            Qt::QueuedConnection);
    });
}

void ModelCache::handleChecked(const QString& path, qint64 size, const QDateTime& modified, const QString& unsupported) {
    m_pendingChecks.remove(path);
    auto header = m_headers.find(path);
    if (header != m_headers.end() && header->size == size && header->modified == modified) {
        header->checked = true;
        header->unsupported = unsupported;
    }
    auto it = std::find_if(m_models.begin(), m_models.end(), [&](const CachedModel& m) { return m.path == path; });
    if (it == m_models.end() || it->checked) return;  // removed meanwhile, or unreadable since
    if (it->size != size || it->modified != modified) {
        queueCheck(*it);  // rewritten while it was being checked: that verdict is an older file's
        return;
    }
    it->checked = true;
    it->unsupported = unsupported;
    Q_EMIT checkReady(path);
}

void ModelCache::handleHashed(const QString& path, qint64 size, const QDateTime& modified, const QString& sha256) {
    m_pending.remove(path);
    auto it = std::find_if(m_models.begin(), m_models.end(), [&](const CachedModel& m) { return m.path == path; });
    if (it == m_models.end()) return;  // removed meanwhile
    if (it->size != size || it->modified != modified) {
        // Rewritten while it was being hashed: that hash belongs to an older file.
        queueHash(*it);
        return;
    }
    if (sha256.isEmpty()) {
        it->error = tr("cannot read the file");
    } else {
        it->sha256 = sha256;
        QSettings settings;
        QVariantMap records = settings.value(kHashesKey).toMap();
        // Forget files that are gone, so the record does not grow forever.
        for (auto r = records.begin(); r != records.end();)
            r = QFileInfo::exists(r.key()) ? std::next(r) : records.erase(r);
        records.insert(path, hashRecord(size, modified, sha256));
        settings.setValue(kHashesKey, records);
    }
    Q_EMIT hashReady(path, sha256);
}
