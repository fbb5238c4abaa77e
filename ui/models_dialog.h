#pragma once
// The Models dialog (File > Models…, and the first start with an empty cache): the models in the cache
// with size, architecture, quantization and SHA-256; load, remove or show them; open any GGUF from
// disk; download one from an address (progress, cancel, resume, SHA-256 check); fetch the default
// model with scripts/fetch-models.sh. Choosing a model emits modelChosen(); the main window loads it.
//
// The dialog is opened, never exec()'d, and a download keeps running while it is hidden.
#include <QDialog>
#include <QElapsedTimer>

struct CachedModel;
class ModelCache;
class ModelDownloader;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProcess;
class QProgressBar;
class QPushButton;
class QTableWidget;

class ModelsDialog : public QDialog {
    Q_OBJECT

public:
    enum Column { NameColumn, SizeColumn, ArchColumn, QuantColumn, RunsColumn, HashColumn };

    explicit ModelsDialog(QWidget* parent = nullptr);
    ~ModelsDialog() override;

    ModelCache* cache() const { return m_cache; }
    ModelDownloader* downloader() const { return m_downloader; }
    QTableWidget* table() const { return m_table; }
    QLineEdit* urlEdit() const { return m_url; }
    QLineEdit* sha256Edit() const { return m_sha; }
    QLineEdit* nameEdit() const { return m_name; }
    QPushButton* loadButton() const { return m_load; }
    QPushButton* removeButton() const { return m_remove; }
    QPushButton* resumeButton() const { return m_resume; }
    QPushButton* downloadButton() const { return m_download; }
    QPushButton* cancelButton() const { return m_cancel; }
    QPushButton* fetchButton() const { return m_fetch; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* banner() const { return m_banner; }
    QString statusText() const;
    QString fetchOutput() const;
    // Row of `path` in the table, -1 when absent.
    int rowOf(const QString& path) const;
    void selectPath(const QString& path);

    // The script "Fetch default model" runs: the installed share/whitebox/fetch-models.sh next to the
    // program, else the source tree's scripts/fetch-models.sh; empty when neither exists.
    static QString findFetchScript();
    // Tests run a stand-in script instead.
    void setFetchScript(const QString& path) { m_fetchScript = path; }

public Q_SLOTS:
    void refresh();
    void loadSelected();
    void openFromDisk();
    void removeSelected();
    void resumeSelected();
    void showFolder();
    void startDownload();
    void cancelTask();
    void fetchDefaultModel();

Q_SIGNALS:
    void modelChosen(const QString& path);

private:
    void applyTheme();
    QWidget* createCacheSection();
    QWidget* createDownloadSection();
    void fillRow(int row, const CachedModel& m);
    void setRunsCell(int row, const CachedModel& m);
    QString selectedPath() const;
    void updateButtons();
    void setStatus(const QString& text, bool error = false);
    void showWhyNotRunnable();
    void setBusy(bool busy);
    void handleHashReady(const QString& path, const QString& sha256);
    void handleCheckReady(const QString& path);
    void handleProgress(qint64 received, qint64 total);
    void handleFinished(const QString& path, const QString& sha256);
    void handleFailed(const QString& error);
    void handleCanceled(const QString& partPath, qint64 kept);
    void runFetchScript(const QString& script);
    void handleFetchFinished(int exitCode, bool crashed);
    QString destinationPath() const;
    void rememberPartial(const QString& partPath, const QString& url, const QString& sha256);

    ModelCache* m_cache;
    ModelDownloader* m_downloader;
    QLabel* m_banner;
    QLabel* m_dirLabel;
    QTableWidget* m_table;
    QPushButton* m_load;
    QPushButton* m_openFile;
    QPushButton* m_resume;
    QPushButton* m_remove;
    QPushButton* m_showFolder;
    QLineEdit* m_url;
    QLineEdit* m_sha;
    QLineEdit* m_name;
    QPushButton* m_download;
    QPushButton* m_cancel;
    QPushButton* m_fetch;
    QProgressBar* m_progress;
    QLabel* m_status;
    QPlainTextEdit* m_output;
    QProcess* m_process = nullptr;
    QString m_fetchScript;
    bool m_fetchCanceled = false;
    bool m_statusIsError = false;
    bool m_statusIsWhyNot = false;  // the status line shows why the selected file cannot run
    bool m_nameEdited = false;      // the user typed a name: URL edits no longer replace it
    QElapsedTimer m_rateClock;      // since this transfer started
    qint64 m_rateOffset = 0;        // bytes that were on disk when it started
};
