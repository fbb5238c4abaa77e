#pragma once
// Takes the screenshots of docs/screenshots/ (whitebox --screenshot DIR): waits for the model, sends
// a prompt, grabs the window while the reply streams, regenerates it once (two versions of the reply),
// then, when that has finished, selects a token in the inspector and grabs the window and every panel,
// then the Models dialog, and quits. With `remote` (whitebox --remote URL) the replies come from that
// server: one reply, then the window and the panels as a remote engine shows them (remote-*.png).
#include <QList>
#include <QObject>
#include <QPair>
#include <QString>

class MainWindow;
class SamplingPanel;

class ScreenshotRunner : public QObject {
    Q_OBJECT

public:
    ScreenshotRunner(MainWindow* window, const QString& directory, const QString& prompt, bool remote = false,
                     QObject* parent = nullptr);

private:
    void grabAll();
    void grabRemote();
    void grabGrammarEditor(SamplingPanel* sampling);
    void grabPresets(SamplingPanel* sampling);
    void grabModelsDialog();
    void save(QWidget* widget, const QString& name);
    void saveDocks(const QList<QPair<QString, QString>>& docks);

    MainWindow* m_window;
    QString m_directory;
    QString m_prompt;
    bool m_grabbedStreaming = false;
    bool m_regenerated = false;
    bool m_grabbedModels = false;
    bool m_remote = false;
};
