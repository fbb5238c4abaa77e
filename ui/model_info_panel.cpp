#include "model_info_panel.h"

#include <QEvent>
#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

#include "engine_types.h"
#include "theme.h"

namespace {

QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->horizontalHeader()->setStretchLastSection(true);
    t->verticalHeader()->setVisible(false);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSortingEnabled(false);
    return t;
}

void setRow(QTableWidget* t, int row, const QStringList& cells) {
    for (int c = 0; c < cells.size(); ++c) t->setItem(row, c, new QTableWidgetItem(cells[c]));
}

}  // namespace

ModelInfoPanel::ModelInfoPanel(QWidget* parent) : QWidget(parent) {
    m_tabs = new QTabWidget(this);
    m_tabs->setAccessibleName(tr("Model details"));
    auto* summary = new QWidget(this);
    auto* form = new QFormLayout(summary);
    m_name = new QLabel(tr("no model loaded"), summary);
    m_file = new QLabel(summary);
    m_hash = new QLabel(summary);
    m_backend = new QLabel(summary);
    m_template = new QLabel(summary);
    m_types = new QLabel(summary);
    m_memory = new QLabel(summary);
    m_warnings = new QLabel(summary);
    for (QLabel* l : {m_name, m_file, m_hash, m_backend, m_template, m_types, m_memory, m_warnings}) {
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    form->addRow(tr("Model"), m_name);
    form->addRow(tr("File"), m_file);
    // 64 hex digits do not wrap: left to set the minimum width, they widened the whole inspector column
    // (past a 1366-pixel screen) once the hash came in. The label takes the width it gets; the tooltip
    // and a selection hold the whole hash.
    m_hash->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    form->addRow(tr("SHA-256"), m_hash);
    form->addRow(tr("Backend"), m_backend);
    form->addRow(tr("Chat template"), m_template);
    form->addRow(tr("Tensor types"), m_types);
    form->addRow(tr("Memory"), m_memory);
    form->addRow(QString(), m_warnings);
    m_architecture = makeTable({tr("hyperparameter"), tr("value")}, this);
    m_metadata = makeTable({tr("key"), tr("value")}, this);
    m_tensors = makeTable({tr("tensor"), tr("type"), tr("shape"), tr("bytes")}, this);
    m_ledger = makeTable({tr("component"), tr("predicted"), tr("measured"), tr("how")}, this);
    m_ledger->setAccessibleName(tr("Memory ledger: predicted and measured bytes by component"));
    // The notes are sentences, wider than the dock: sized to their text, the column ran past the dock's
    // edge and was cut there. fitLedgerColumns gives the names and the notes the width the numbers
    // leave, the text wraps and each row grows to hold it (and a note's tooltip has it whole).
    m_ledger->horizontalHeader()->setStretchLastSection(false);
    m_ledger->setWordWrap(true);
    m_ledger->setTextElideMode(Qt::ElideNone);
    m_ledger->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_ledger->viewport()->installEventFilter(this);
    m_tabs->addTab(summary, tr("Summary"));
    m_tabs->addTab(m_ledger, tr("Memory"));
    m_tabs->addTab(m_architecture, tr("Architecture"));
    m_tabs->addTab(m_metadata, tr("Metadata"));
    m_tabs->addTab(m_tensors, tr("Tensors"));
    m_ledger->installEventFilter(this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_tabs);
    applyTheme();
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &ModelInfoPanel::applyTheme);
}

void ModelInfoPanel::applyTheme() {
    Theme::setTextColor(m_warnings, Theme::Role::Warning);
}

QString ModelInfoPanel::hashText() const { return m_hash->text(); }
QString ModelInfoPanel::memoryText() const { return m_memory->text(); }

void ModelInfoPanel::setModel(const ModelSummary& s) {
    m_path = s.path;
    m_name->setText(QStringLiteral("<b>%1</b> (%2)").arg(s.name.toHtmlEscaped(), s.arch.toHtmlEscaped()));
    if (s.isRemote()) {
        // No file, no hash, no memory figures: a server exposes none of them.
        m_file->setText(tr("served by %1").arg(s.remoteUrl));
        m_hash->setText(tr("(the server's file is not visible)"));
    } else {
        m_file->setText(tr("%1\n%2, GGUF v%3").arg(s.path, formatBytes(double(s.fileSize))).arg(s.ggufVersion));
        m_hash->setText(tr("computing…"));
    }
    QString backend = s.backendDescription.isEmpty() ? s.backendName : s.backendDescription;
    if (!s.backendNote.isEmpty()) backend += QLatin1Char('\n') + s.backendNote;
    m_backend->setText(backend);
    m_template->setText(s.chatTemplate);
    QStringList types;
    for (const auto& [type, count] : s.tensorTypes) types << QStringLiteral("%1 × %2").arg(type).arg(count);
    m_types->setText(types.join(QStringLiteral(", ")));
    // The context's figure counts the sliding window: a local layer never holds more than its window.
    m_memory->setText(tr("weights %1 · KV cache %2 per token, %3 at the %4-token context (%5%6); the Memory tab has the ledger")
                          .arg(formatBytes(double(s.weightBytes)), formatBytes(double(s.kvBytesPerToken)),
                               formatBytes(double(s.predictedKvBytes(s.contextSize, s.kvTypeK, s.kvTypeV))))
                          .arg(s.contextSize)
                          .arg(s.kvTypes.isEmpty() ? QStringLiteral("f16") : s.kvTypes)
                          .arg(s.localLayerCount() > 0 ? tr(", %1 local layers keep %2 positions").arg(s.localLayerCount()).arg(s.slidingWindow)
                                                       : QString()));
    if (s.isRemote()) m_memory->setText(tr("A remote engine does not expose its memory: no weights, KV cache or activations to show."));
    m_warnings->setText(s.warnings);
    m_warnings->setVisible(!s.warnings.isEmpty());

    m_architecture->setRowCount(int(s.architecture.size()));
    for (int i = 0; i < s.architecture.size(); ++i) setRow(m_architecture, i, {s.architecture[i].first, s.architecture[i].second});
    m_metadata->setRowCount(int(s.metadata.size()));
    for (int i = 0; i < s.metadata.size(); ++i) setRow(m_metadata, i, {s.metadata[i].first, s.metadata[i].second});
    m_tensors->setRowCount(int(s.tensors.size()));
    for (int i = 0; i < s.tensors.size(); ++i) {
        const TensorRow& t = s.tensors[i];
        setRow(m_tensors, i, {t.name, t.type, t.shape, QString::number(t.bytes)});
    }
    m_summary = s;
    m_hasModel = true;
    m_hasKv = false;
    m_device = {};
    m_comparison = {};
    m_ledgerStale = true;  // other rows: rebuilt now if shown, else when shown
    updateLedger();
    for (QTableWidget* t : {m_architecture, m_metadata, m_tensors}) t->resizeColumnsToContents();
}

void ModelInfoPanel::setKvStats(const wb::KvStats& stats) {
    m_kv = stats;
    m_hasKv = true;
    updateLedger();
}

void ModelInfoPanel::setAttentionMemory(qint64 used, qint64 budget) {
    m_attentionUsed = used;
    m_attentionBudget = budget;
    updateLedger();
}

void ModelInfoPanel::setDeviceMemory(const wb::DeviceMemory& memory) {
    m_device = memory;
    updateLedger();
}

void ModelInfoPanel::setComparisonMemory(const ComparisonMemory& memory) {
    m_comparison = memory;
    updateLedger();
}

qint64 ModelInfoPanel::ledgerBytes(const QString& key, int column) const {
    for (int r = 0; r < m_ledger->rowCount(); ++r) {
        if (m_ledger->item(r, ComponentColumn)->data(KeyRole).toString() != key) continue;
        const QTableWidgetItem* item = m_ledger->item(r, column);
        return item && item->data(BytesRole).isValid() ? item->data(BytesRole).toLongLong() : -1;
    }
    return -1;
}

bool ModelInfoPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_ledger && event->type() == QEvent::Show && m_ledgerStale) fillLedger(ledgerRows());
    // The dock resized, or a scroll bar came or went: the columns share the new width.
    if (watched == m_ledger->viewport() && event->type() == QEvent::Resize) fitLedgerColumns();
    return QWidget::eventFilter(watched, event);
}

void ModelInfoPanel::updateLedger() {
    if (!m_hasModel) return;
    // Hidden (another tab, a closed or covered dock): nothing on screen to change; the show rebuilds it.
    if (!m_ledger->isVisible()) {
        m_ledgerStale = true;
        return;
    }
    const QVector<LedgerRow> rows = ledgerRows();
    if (m_ledgerStale) fillLedger(rows);
    else refreshLedger(rows);
}

QVector<ModelInfoPanel::LedgerRow> ModelInfoPanel::ledgerRows() const {
    const ModelSummary& s = m_summary;
    QVector<LedgerRow> rows;
    const bool cpu = s.backendName == QLatin1String("cpu");
    const QString weightsHow = cpu ? tr("read in place from the file mapping (pages the system loads as they are used)")
                                   : tr("copied to the device (the device memory row counts the copies)");
    for (const auto& [type, bytes] : s.weightBytesByType) {
        int count = 0;
        for (const auto& [t, n] : s.tensorTypes)
            if (t == type) count = n;
        qint64 repacked = -1;
        for (const auto& [t, n] : s.repackedBytesByType)
            if (t == type) repacked = qint64(n);
        if (repacked >= 0)
            rows.append({QStringLiteral("weights:") + type, tr("weights, %1 (%2 tensors)").arg(type).arg(count), qint64(bytes), repacked,
                         tr("repacked at load for the CPU kernels (measured: the copy, by the backend's count); the "
                            "file mapping's pages of it are given back")});
        else
            rows.append({QStringLiteral("weights:") + type, tr("weights, %1 (%2 tensors)").arg(type).arg(count), qint64(bytes), -1, weightsHow});
    }
    rows.append({QStringLiteral("weights"), tr("weights, all types"), qint64(s.weightBytes), -1, tr("the file's tensor data")});
    const int local = s.localLayerCount();
    const QString layers = local > 0 ? tr("%1 global layers, %2 local ones hold at most %3 positions").arg(s.nLayer - local).arg(local).arg(s.slidingWindow)
                                     : tr("%1 layers, each holds every position").arg(s.nLayer);
    rows.append({QStringLiteral("kv_full"), tr("KV cache at the full context (%1 tokens)").arg(s.contextSize),
                 qint64(s.predictedKvBytes(s.contextSize, s.kvTypeK, s.kvTypeV)), -1,
                 tr("%1; %2").arg(layers, s.kvTypes.isEmpty() ? QStringLiteral("f16") : s.kvTypes)});
    if (m_hasKv)
        rows.append({QStringLiteral("kv_now"), tr("KV cache now (%1 tokens)").arg(m_kv.n_tokens),
                     qint64(s.predictedKvBytes(m_kv.n_tokens, m_kv.type_k, m_kv.type_v)), qint64(m_kv.bytes_used),
                     tr("measured: the cache's own count; %1 reserved in whole blocks of %2 tokens")
                         .arg(formatBytes(double(m_kv.bytes_reserved)))
                         .arg(m_kv.block_tokens)});
    rows.append({QStringLiteral("scratch"), tr("scratch activations"), s.scratchPredicted > 0 ? qint64(s.scratchPredicted) : -1,
                 s.scratchMeasured > 0 ? qint64(s.scratchMeasured) : -1,
                 s.scratchMeasured > 0 ? tr("batches of %1 tokens; measured: what the backend's allocator holds").arg(s.batchTokens)
                                       : tr("batches of %1 tokens; this backend does not count its allocations").arg(s.batchTokens)});
    rows.append({QStringLiteral("attention"), tr("captured attention"), m_attentionBudget, m_attentionUsed,
                 tr("the Attention panel's store: predicted is its budget, measured what it holds")});
    if (m_comparison.loaded) appendComparisonRows(rows);
    if (m_device.counted) rows.append(deviceRow());
    return rows;
}

void ModelInfoPanel::appendComparisonRows(QVector<LedgerRow>& rows) const {
    const ModelSummary& c = m_comparison.summary;
    const wb::KvStats& kv = m_comparison.kv;
    const QString name = QFileInfo(c.path).fileName();
    const bool device = m_device.counted;
    const QString how = m_comparison.weightCopies < 0
                            ? tr("loaded for Compare until it ends; read in place from its file mapping")
                            : device ? tr("loaded for Compare until it ends; measured: what the backend copied to the device for it")
                                     : tr("loaded for Compare until it ends; measured: the backend's repacked copies of its matrices "
                                          "(its other tensors are read in place)");
    rows.append({QStringLiteral("compare_weights"), tr("comparison model's weights (%1)").arg(name), qint64(c.weightBytes),
                 m_comparison.weightCopies, how});
    rows.append({QStringLiteral("compare_kv"), tr("comparison model's KV cache (%1 tokens)").arg(kv.n_tokens),
                 qint64(c.predictedKvBytes(kv.n_tokens, kv.type_k, kv.type_v)), qint64(kv.bytes_used),
                 tr("measured: its cache's own count; %1 reserved").arg(formatBytes(double(kv.bytes_reserved)))});
    if (!m_comparison.chatResized) return;
    const wb::KvStats& chat = m_comparison.chatKv;
    rows.append({QStringLiteral("compare_chat_kv"), tr("chat model's KV cache for Compare (%1 tokens)").arg(chat.n_tokens),
                 qint64(m_summary.predictedKvBytes(chat.n_tokens, chat.type_k, chat.type_v)), qint64(chat.bytes_used),
                 tr("the reply went on past the chat's context: Compare runs the chat model in a session of %1 tokens "
                    "of its own until it ends; measured: its cache's own count; %2 reserved")
                     .arg(chat.capacity)
                     .arg(formatBytes(double(chat.bytes_reserved)))});
}

ModelInfoPanel::LedgerRow ModelInfoPanel::deviceRow() const {
    const ModelSummary& s = m_summary;
    // Predicted: the rows above that live on the device (the weights, the KV cache now, the scratch).
    const quint64 kv = m_hasKv ? s.predictedKvBytes(m_kv.n_tokens, m_kv.type_k, m_kv.type_v) : 0;
    // While Compare runs, its rows share the device: the second model's weights and KV cache, and the
    // chat model's own second cache when the reply went on past the chat's context.
    quint64 comparison = 0;
    if (m_comparison.loaded) {
        const wb::KvStats& kv2 = m_comparison.kv;
        comparison = m_comparison.summary.weightBytes + m_comparison.summary.predictedKvBytes(kv2.n_tokens, kv2.type_k, kv2.type_v);
        const wb::KvStats& chat = m_comparison.chatKv;
        if (m_comparison.chatResized) comparison += s.predictedKvBytes(chat.n_tokens, chat.type_k, chat.type_v);
    }
    const qint64 predicted = qint64(s.weightBytes + kv + s.scratchPredicted + comparison);
    const auto bytes = [](uint64_t b) { return formatBytes(double(b)); };
    return {QStringLiteral("device"), tr("device memory (%1)").arg(s.backendName), predicted, qint64(m_device.total()),
            tr("measured: the backend's own count of what it allocated on the device: weights %1, KV cache %2 "
               "(blocks freed by a shorter context are kept for reuse), scratch %3 (activations, workspaces); "
               "predicted: the weights, the KV cache now and the scratch above (and Compare's rows while it runs)")
                .arg(bytes(m_device.weights), bytes(m_device.kv_cache), bytes(m_device.scratch))};
}

void ModelInfoPanel::fillLedger(const QVector<LedgerRow>& rows) {
    m_ledger->setRowCount(0);
    m_ledger->setRowCount(int(rows.size()));
    for (int r = 0; r < rows.size(); ++r) setLedgerRow(r, rows[r]);
    fitLedgerColumns();
    m_ledgerStale = false;
    ++m_ledgerRebuilds;
}

void ModelInfoPanel::refreshLedger(const QVector<LedgerRow>& rows) {
    bool sameRows = m_ledger->rowCount() == rows.size();
    for (int r = 0; sameRows && r < rows.size(); ++r)
        sameRows = m_ledger->item(r, ComponentColumn)->data(KeyRole).toString() == rows[r].key;
    if (!sameRows) {
        fillLedger(rows);
        return;
    }
    QVector<bool> changed(m_ledger->columnCount(), false);
    for (int r = 0; r < rows.size(); ++r) setLedgerRow(r, rows[r], &changed);
    // Only a changed text can need other widths (a streamed reply changes a few cells ~30 times a second).
    if (changed.contains(true)) fitLedgerColumns();
}

void ModelInfoPanel::fitLedgerColumns() {
    // QTableView hides the measure that QAbstractItemView makes public.
    const QAbstractItemView* view = m_ledger;
    // The numbers never wrap: their columns take what their text (and header) needs.
    m_ledger->resizeColumnToContents(PredictedColumn);
    m_ledger->resizeColumnToContents(MeasuredColumn);
    const int rest = m_ledger->viewport()->width() - m_ledger->columnWidth(PredictedColumn) - m_ledger->columnWidth(MeasuredColumn);
    // A name takes what it needs up to 40 % of the rest, the notes the remainder; below a width where
    // a note would wrap a word or two per line, the table scrolls instead.
    const int minimum = m_ledger->fontMetrics().averageCharWidth() * 12;
    const int name = std::clamp(view->sizeHintForColumn(ComponentColumn), minimum, std::max(minimum, rest * 2 / 5));
    m_ledger->setColumnWidth(ComponentColumn, name);
    m_ledger->setColumnWidth(NoteColumn, std::max(minimum, rest - name));
}

void ModelInfoPanel::setLedgerRow(int row, const LedgerRow& values, QVector<bool>* changed) {
    // QTableWidgetItem ignores a value equal to the one it holds: unchanged cells are not repainted.
    auto cell = [this, row, changed](int column, const QString& text) {
        QTableWidgetItem* item = m_ledger->item(row, column);
        if (!item) {
            item = new QTableWidgetItem;
            m_ledger->setItem(row, column, item);
        }
        if (changed && item->text() != text) (*changed)[column] = true;
        item->setText(text);
        return item;
    };
    cell(ComponentColumn, values.component)->setData(KeyRole, values.key);
    for (const auto& [column, bytes] : {std::pair{int(PredictedColumn), values.predicted}, std::pair{int(MeasuredColumn), values.measured}}) {
        QTableWidgetItem* item = cell(column, bytes >= 0 ? formatBytes(double(bytes)) : QStringLiteral("—"));
        item->setData(BytesRole, bytes >= 0 ? QVariant(bytes) : QVariant());
        item->setToolTip(bytes >= 0 ? tr("%1 bytes").arg(bytes) : QString());
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    cell(NoteColumn, values.how)->setToolTip(values.how);
}

void ModelInfoPanel::setFileHash(const QString& path, const QString& sha256) {
    if (path != m_path) return;
    m_hash->setText(sha256);
    m_hash->setToolTip(sha256);
}
