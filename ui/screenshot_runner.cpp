#include "screenshot_runner.h"

#include <functional>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPixmap>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>

#include "chat_controller.h"
#include "chat_panel.h"
#include "grammar_controls.h"
#include "main_window.h"
#include "model_cache.h"
#include "model_info_panel.h"
#include "models_dialog.h"
#include "param_control.h"
#include "sampler_chain_controls.h"
#include "sampling_panel.h"
#include "timings_panel.h"

namespace {
// Tokens into the reply when the "while generating" picture is taken.
constexpr int kStreamingShotAfter = 24;
// The Models dialog is grabbed once its hashes are in (the first time they are computed), or after this.
constexpr int kModelsHashWaitMs = 60000;
}

ScreenshotRunner::ScreenshotRunner(MainWindow* window, const QString& directory, const QString& prompt, bool remote,
                                   QObject* parent)
    : QObject(parent), m_window(window), m_directory(directory), m_prompt(prompt), m_remote(remote) {
    QDir().mkpath(directory);
    ChatController* c = window->controller();
    // The logit lens and head statistics pictures need their data, though those panels are tabs behind
    // the attention panel while the reply is generated.
    window->setRecordInspection(true);
    // The Timings picture with its per-layer bars.
    window->timingsPanel()->layerTimingBox()->setChecked(true);
    connect(c, &ChatController::modelLoaded, this, [this] {
        QTimer::singleShot(500, this, [this] { m_window->controller()->sendMessage(m_prompt); });
    });
    connect(c, &ChatController::tokenAppended, this, [this](int, int token) {
        if (!m_grabbedStreaming && token >= kStreamingShotAfter) {
            m_grabbedStreaming = true;
            save(m_window, QStringLiteral("window-streaming.png"));
        }
    });
    connect(c, &ChatController::generationFinished, this, [this] {
        if (m_remote) {
            const auto& messages = m_window->controller()->conversation().messages;
            if (!messages.isEmpty() && messages.last().tokens.size() > 3) m_window->inspectToken(int(messages.size()) - 1, 3);
            QTimer::singleShot(800, this, [this] { grabRemote(); });
            return;
        }
        // Once more, so the reply shows its versions ("< 2/2 >") in the pictures.
        if (!m_regenerated) {
            m_regenerated = true;
            QTimer::singleShot(300, this, [this] { m_window->controller()->regenerate(); });
            return;
        }
        const auto& messages = m_window->controller()->conversation().messages;
        if (!messages.isEmpty() && messages.last().tokens.size() > 3) m_window->inspectToken(int(messages.size()) - 1, 3);
        // Let queued replots and the layout settle before grabbing.
        QTimer::singleShot(800, this, [this] { grabAll(); });
    });
    connect(c, &ChatController::loadFailed, qApp, [](const QString&, const QString&) { QApplication::exit(2); });
}

void ScreenshotRunner::save(QWidget* widget, const QString& name) {
    widget->grab().save(QDir(m_directory).filePath(name));
}

// Each (dock object name, file) in front, then its picture; a dock the window lacks is passed over.
void ScreenshotRunner::saveDocks(const QList<QPair<QString, QString>>& docks) {
    for (const auto& [dockName, file] : docks) {
        QDockWidget* d = m_window->dock(dockName);
        if (!d) continue;
        d->raise();
        QApplication::processEvents();
        save(d, file);
    }
}

void ScreenshotRunner::grabAll() {
    save(m_window, QStringLiteral("window.png"));
    save(m_window->chatPanel(), QStringLiteral("chat.png"));
    const QList<QPair<QString, QString>> docks = {
        {QStringLiteral("samplingDock"), QStringLiteral("sampling.png")},
        {QStringLiteral("attentionDock"), QStringLiteral("attention.png")},
        {QStringLiteral("kvCacheDock"), QStringLiteral("kv-cache.png")},
        {QStringLiteral("tokenInspectorDock"), QStringLiteral("token-inspector.png")},
        {QStringLiteral("modelInfoDock"), QStringLiteral("model-info.png")},
        {QStringLiteral("conversationsDock"), QStringLiteral("conversations.png")},
        {QStringLiteral("promptDock"), QStringLiteral("prompt.png")},
        {QStringLiteral("logitLensDock"), QStringLiteral("logit-lens.png")},
        {QStringLiteral("headStatsDock"), QStringLiteral("head-stats.png")},
        {QStringLiteral("timingsDock"), QStringLiteral("timings.png")},
    };
    saveDocks(docks);
    // Model info's memory ledger.
    if (QDockWidget* info = m_window->dock(QStringLiteral("modelInfoDock"))) {
        info->raise();
        QTabWidget* tabs = m_window->modelInfoPanel()->tabs();
        const int was = tabs->currentIndex();
        tabs->setCurrentWidget(m_window->modelInfoPanel()->ledgerTable());
        QApplication::processEvents();
        save(info, QStringLiteral("model-memory.png"));
        tabs->setCurrentIndex(was);
    }
    // The samplers below the classic knobs (DRY ... the order), scrolled into view.
    SamplingPanel* sampling = m_window->samplingPanel();
    sampling->knobArea()->ensureWidgetVisible(sampling->chainControls()->orderList());
    QApplication::processEvents();
    save(m_window->dock(QStringLiteral("samplingDock")), QStringLiteral("sampling-samplers.png"));
    grabGrammarEditor(sampling);
}

// A remote engine's pictures: the window with the token inspector on the server's logprobs, and the
// panels it feeds or covers with the "not exposed" notice.
void ScreenshotRunner::grabRemote() {
    save(m_window, QStringLiteral("remote-window.png"));
    const QList<QPair<QString, QString>> docks = {
        {QStringLiteral("samplingDock"), QStringLiteral("remote-sampling.png")},
        {QStringLiteral("tokenInspectorDock"), QStringLiteral("remote-token-inspector.png")},
        {QStringLiteral("attentionDock"), QStringLiteral("remote-attention.png")},
        {QStringLiteral("modelInfoDock"), QStringLiteral("remote-model-info.png")},
    };
    saveDocks(docks);
    // The window again with a covered panel in front (the inspector was in front above).
    m_window->dock(QStringLiteral("attentionDock"))->raise();
    QApplication::processEvents();
    save(m_window, QStringLiteral("remote-window-attention.png"));
    QApplication::quit();
}

// The "Constrain output" group with a JSON Schema example, then with a text that does not compile,
// each grabbed once the form has laid the editor out (it was hidden); None again afterwards, so the
// run leaves no grammar in the settings. Then the Models dialog.
void ScreenshotRunner::grabGrammarEditor(SamplingPanel* sampling) {
    GrammarControls* grammar = sampling->grammarControls();
    const auto grabLater = [this, sampling](const QString& file, std::function<void()> next) {
        QTimer::singleShot(300, this, [this, sampling, file, next] {
            // The group is the last of the form: scrolled to the end, the editor and its error show whole.
            QScrollBar* bar = sampling->knobArea()->verticalScrollBar();
            bar->setValue(bar->maximum());
            QApplication::processEvents();
            save(m_window->dock(QStringLiteral("samplingDock")), file);
            next();
        });
    };
    grammar->loadExample(grammar->exampleBox()->findText(GrammarControls::tr("JSON object (name, age)")));
    grabLater(QStringLiteral("sampling-grammar.png"), [this, sampling, grammar, grabLater] {
        grammar->setSource(GrammarControls::Mode::GBNF, QStringLiteral("root ::= answer\nanswer ::= (\"yes\" | \"no\""));
        grabLater(QStringLiteral("sampling-grammar-error.png"), [this, sampling] { grabPresets(sampling); });
    });
}

// The built-in presets with DRY and XTC, and with a JSON-object grammar; then the note a grammar refused
// during a reply leaves (shown here as the engine's refusal would show it). The Balanced preset and no
// grammar afterwards, so the run leaves the settings as they were. Then the Models dialog.
void ScreenshotRunner::grabPresets(SamplingPanel* sampling) {
    sampling->applyPreset(QStringLiteral("Varied (DRY + XTC)"));
    QTimer::singleShot(300, this, [this, sampling] {
        sampling->knobArea()->ensureWidgetVisible(sampling->control(QStringLiteral("xtc_threshold")));
        QApplication::processEvents();
        save(m_window->dock(QStringLiteral("samplingDock")), QStringLiteral("sampling-preset-varied.png"));
        sampling->applyPreset(QStringLiteral("JSON output"));
        QTimer::singleShot(300, this, [this, sampling] {
            QScrollBar* bar = sampling->knobArea()->verticalScrollBar();
            bar->setValue(bar->maximum());
            QApplication::processEvents();
            save(m_window->dock(QStringLiteral("samplingDock")), QStringLiteral("sampling-preset-json.png"));
            wb::SamplingParams kept = sampling->params();
            sampling->grammarControls()->setSource(GrammarControls::Mode::GBNF, QStringLiteral("root ::= \"Z\" [^7]*"));
            sampling->showGrammarRefused(
                kept, ChatController::tr("The new grammar was not applied to this reply: %1. The grammar in force stays.")
                          .arg(QStringLiteral("the reply so far does not parse under it: it cannot start with \"{\" "
                                              "(token 1 of the reply)")));
            QTimer::singleShot(300, this, [this, sampling] {
                sampling->knobArea()->ensureWidgetVisible(sampling->grammarControls()->noticeLabel());
                QApplication::processEvents();
                save(m_window->dock(QStringLiteral("samplingDock")), QStringLiteral("sampling-grammar-refused.png"));
                sampling->applyPreset(QStringLiteral("Balanced"));
                sampling->grammarControls()->setSource(GrammarControls::Mode::NONE, QString());
                sampling->knobArea()->ensureWidgetVisible(sampling->control(QStringLiteral("temperature")));
                grabModelsDialog();
            });
        });
    });
}

void ScreenshotRunner::grabModelsDialog() {
    m_window->openModelsDialog();
    ModelsDialog* dialog = m_window->modelsDialog();
    dialog->selectPath(m_window->controller()->model().path);
    auto finish = [this, dialog] {
        if (m_grabbedModels) return;
        m_grabbedModels = true;
        save(dialog, QStringLiteral("models.png"));
        dialog->close();
        QApplication::quit();
    };
    // Every hash and "Can run" verdict in the picture (both come from worker threads).
    const auto finishWhenDone = [this, dialog, finish] {
        if (!dialog->cache()->isHashing() && !dialog->cache()->isChecking()) QTimer::singleShot(300, this, finish);
    };
    connect(dialog->cache(), &ModelCache::hashReady, this, finishWhenDone);
    connect(dialog->cache(), &ModelCache::checkReady, this, finishWhenDone);
    QTimer::singleShot(kModelsHashWaitMs, this, finish);
    finishWhenDone();
}
