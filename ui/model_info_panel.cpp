#include "model_info_panel.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

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
    m_tabs->addTab(summary, tr("Summary"));
    m_tabs->addTab(m_architecture, tr("Architecture"));
    m_tabs->addTab(m_metadata, tr("Metadata"));
    m_tabs->addTab(m_tensors, tr("Tensors"));
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
    m_file->setText(tr("%1\n%2, GGUF v%3").arg(s.path, formatBytes(double(s.fileSize))).arg(s.ggufVersion));
    m_hash->setText(tr("computing…"));
    QString backend = s.backendDescription.isEmpty() ? s.backendName : s.backendDescription;
    if (!s.backendNote.isEmpty()) backend += QLatin1Char('\n') + s.backendNote;
    m_backend->setText(backend);
    m_template->setText(s.chatTemplate);
    QStringList types;
    for (const auto& [type, count] : s.tensorTypes) types << QStringLiteral("%1 × %2").arg(type).arg(count);
    m_types->setText(types.join(QStringLiteral(", ")));
    m_memory->setText(tr("weights %1 · KV cache %2 per token, %3 at the %4-token context (%5)")
                          .arg(formatBytes(double(s.weightBytes)), formatBytes(double(s.kvBytesPerToken)),
                               formatBytes(double(s.kvBytesPerToken) * s.contextSize))
                          .arg(s.contextSize)
                          .arg(s.kvTypes.isEmpty() ? QStringLiteral("f16") : s.kvTypes));
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
    for (QTableWidget* t : {m_architecture, m_metadata, m_tensors}) t->resizeColumnsToContents();
}

void ModelInfoPanel::setFileHash(const QString& path, const QString& sha256) {
    if (path != m_path) return;
    m_hash->setText(sha256);
    m_hash->setToolTip(sha256);
}
