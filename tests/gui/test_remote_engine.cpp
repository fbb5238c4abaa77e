// A remote engine in the desktop app (issue 19 item 3), in the main window against a real
// `whitebox-cli serve` of the default model on a free loopback port, and against small fake servers:
// a connection that fails (nothing listening) is a clear message and keeps neither the setting nor
// anything else, the model in use stays; one that works keeps the setting, covers the internals
// panels with the "not exposed" notice, streams the reply into the chat with the server's logprobs
// as the token inspector's candidates (compared with the server's own non-streamed answer); Stop ends
// a reply at once; a sampling change mid-reply continues it from the text so far; a 500 and a
// malformed stream are clear messages and the user's message stays; loading a local model goes back.
#include <QAction>
#include <QActionGroup>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTcpServer>
#include <QTreeWidget>
#include <QtTest>

#include <cmath>

#include "app_settings.h"
#include "chat/chat_template.h"
#include "chat_controller.h"
#include "chat_panel.h"
#include "context_full_notice.h"
#include "gui_test_support.h"
#include "internals_notice.h"
#include "load_options_menu.h"
#include "main_window.h"
#include "message_edit.h"
#include "model/model_paths.h"
#include "remote_connect_dialog.h"
#include "remote_engine_ui.h"
#include "remote_reply.h"
#include "remote_test_support.h"
#include "sampler_chain_controls.h"
#include "sampling_panel.h"
#include "token_inspector.h"

namespace {

constexpr int kTimeoutMs = 120000;

// A port nothing listens on (bound for a moment, then let go).
int freePort() {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

// The text of the message boxes the window has open (errors are shown so).
QString openMessages(QWidget* window) {
    QStringList texts;
    for (QMessageBox* box : window->findChildren<QMessageBox*>())
        if (box->isVisible()) texts << box->windowTitle() + QStringLiteral(": ") + box->text();
    return texts.join(QLatin1Char('\n'));
}

void closeMessages(QWidget* window) {
    for (QMessageBox* box : window->findChildren<QMessageBox*>()) box->close();
}

wb::SamplingParams greedy(int maxTokens) {
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = maxTokens;
    return p;
}

}  // namespace

class TestRemoteEngine : public QObject {
    Q_OBJECT

    QProcess m_server;
    int m_port = 0;
    MainWindow* m_w = nullptr;

    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_port); }

    // Sets the sampling panel (and so the controller) to p.
    void useSampling(const wb::SamplingParams& p) {
        m_w->samplingPanel()->setParams(p);
        m_w->controller()->setSamplingParams(p);
    }

    // Connects through File > Connect to server…'s dialog; true when the window reports the engine loaded.
    bool connectByDialog(const QString& address, const QString& model = {}) {
        QSignalSpy loaded(m_w->controller(), &ChatController::modelLoaded);
        QSignalSpy failed(m_w->controller(), &ChatController::loadFailed);
        m_w->remoteEngineUi()->connectAction()->trigger();
        RemoteConnectDialog* d = m_w->remoteEngineUi()->dialog();
        if (!d || !d->isVisible()) return false;
        d->urlEdit()->setText(address);
        d->keyEdit()->setText(QStringLiteral("test-key"));
        d->modelEdit()->setText(model);
        d->connectButton()->click();
        QElapsedTimer t;
        t.start();
        while (loaded.isEmpty() && failed.isEmpty() && t.elapsed() < kTimeoutMs) QTest::qWait(10);
        return !loaded.isEmpty();
    }

    // Sends `text` through the message box; the finished summary (reason NONE when none came in time).
    GenerationSummary sendAndWait(const QString& text) {
        QSignalSpy finished(m_w->controller(), &ChatController::generationFinished);
        m_w->chatPanel()->input()->setPlainText(text);
        m_w->chatPanel()->sendButton()->click();
        if (!finished.wait(kTimeoutMs)) return {};
        return finished.last().at(0).value<GenerationSummary>();
    }

    // The server's own non-streamed answer to one user message, greedy, with logprobs.
    QJsonObject reference(const QString& user, int maxTokens) {
        httplib::Client c("127.0.0.1", m_port);
        c.set_read_timeout(kTimeoutMs / 1000, 0);
        const QJsonObject body{{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", user}}}},
                               {"max_tokens", maxTokens}, {"temperature", 0.0}, {"logprobs", true},
                               {"top_logprobs", 20}, {"stream", false}};
        const auto r = c.Post("/v1/chat/completions", QJsonDocument(body).toJson().toStdString(), "application/json");
        if (!r || r->status != 200) return {};
        return QJsonDocument::fromJson(QByteArray::fromStdString(r->body)).object()["choices"].toArray().at(0).toObject();
    }

    // A counter of the server's GET /metrics (-1 when it is not there).
    double metric(const char* name) {
        httplib::Client c("127.0.0.1", m_port);
        const auto r = c.Get("/metrics");
        if (!r) return -1;
        for (const QByteArray& line : QByteArray::fromStdString(r->body).split('\n'))
            if (line.startsWith(QByteArray(name) + ' ')) return line.mid(int(strlen(name)) + 1).toDouble();
        return -1;
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_remote_engine");
        const QString model = QString::fromStdString(wb::default_model_path());
        if (!QFileInfo::exists(model)) QFAIL("default model missing: run scripts/fetch-models.sh");
        // The real server, as a user starts it; it names its port on stderr.
        m_server.setProgram(QStringLiteral(WB_CLI_PATH));
        m_server.setArguments({QStringLiteral("serve"), QStringLiteral("-m"), model, QStringLiteral("--port"), QStringLiteral("0"),
                               QStringLiteral("--ctx"), QStringLiteral("1024"), QStringLiteral("--threads"), QStringLiteral("1")});
        m_server.start();
        QVERIFY(m_server.waitForStarted());
        const QRegularExpression serving(QStringLiteral("at http://127\\.0\\.0\\.1:(\\d+)/v1"));
        QByteArray err;
        QElapsedTimer t;
        t.start();
        while (m_port == 0 && t.elapsed() < kTimeoutMs && m_server.state() == QProcess::Running) {
            m_server.waitForReadyRead(100);
            err += m_server.readAllStandardError();
            const auto m = serving.match(QString::fromUtf8(err));
            if (m.hasMatch()) m_port = m.captured(1).toInt();
        }
        QVERIFY2(m_port > 0, err.constData());
        m_w = new MainWindow;
        m_w->show();
        QSignalSpy loaded(m_w->controller(), &ChatController::modelLoaded);
        m_w->start();
        QVERIFY(loaded.wait(kTimeoutMs));
        QVERIFY(!m_w->controller()->isRemote());
        m_w->chatPanel()->systemPromptEdit()->setPlainText(QString());
    }

    void cleanupTestCase() {
        delete m_w;
        m_server.terminate();
        m_server.waitForFinished(10000);
    }

    void cleanup() {
        closeMessages(m_w);
    }

    // A chunk's tokens become one event each, its text goes with the last (the reply is the texts
    // joined), the alternatives are the raw p; a chunk without logprobs is one event of unknown p.
    void chunksBecomeTokenEvents() {
        wb::remote::StreamDelta d;
        d.text = "Hello wor";
        d.tokens = {{"Hello", std::log(0.5f), {{"Hello", std::log(0.5f)}, {"Hi", std::log(0.25f)}}},
                    {" wor", std::log(0.125f), {{" world", std::log(0.75f)}, {" wor", std::log(0.125f)}}}};
        int32_t next = 7;
        const std::vector<wb::TokenEvent> ev = remote_reply::tokenEvents(d, &next);
        QCOMPARE(int(ev.size()), 2);
        QCOMPARE(next, 9);
        QCOMPARE(ev[0].index, 7);
        QCOMPARE(ev[0].piece, std::string());
        QCOMPARE(ev[1].piece, std::string("Hello wor"));
        QCOMPARE(ev[1].token_piece, std::string(" wor"));
        QVERIFY(std::abs(ev[1].p_raw - 0.125f) < 1e-6f);
        QCOMPARE(int(ev[1].candidates.size()), 2);
        QVERIFY(std::abs(ev[1].candidates[0].p_raw - 0.75f) < 1e-6f);
        QVERIFY(std::isnan(ev[1].candidates[0].p_final));
        // The drawn token's candidate shares its id; the others have ids of their own.
        QVERIFY(ev[1].candidates[0].id != ev[1].id);
        QCOMPARE(ev[1].candidates[1].id, ev[1].id);
        wb::remote::StreamDelta plain;
        plain.text = "text";
        const std::vector<wb::TokenEvent> one = remote_reply::tokenEvents(plain, &next);
        QCOMPARE(int(one.size()), 1);
        QCOMPARE(one[0].piece, std::string("text"));
        QVERIFY(std::isnan(one[0].p));
        QVERIFY(remote_reply::tokenEvents(wb::remote::StreamDelta{}, &next).empty());
        QCOMPARE(next, 10);
        // A server that sends more alternatives than asked: only the kTopLogprobs most likely are kept.
        wb::remote::StreamDelta many;
        many.text = "x";
        many.tokens = {{"x", std::log(0.5f), {}}};
        for (int i = 0; i < 3 * remote_reply::kTopLogprobs; ++i) many.tokens[0].top.push_back({"c" + std::to_string(i), std::log(0.01f)});
        const std::vector<wb::TokenEvent> capped = remote_reply::tokenEvents(many, &next);
        QCOMPARE(int(capped.size()), 1);
        QCOMPARE(int(capped[0].candidates.size()), remote_reply::kTopLogprobs);
        QCOMPARE(capped[0].candidates.back().piece, "c" + std::to_string(remote_reply::kTopLogprobs - 1));
    }

    // The panel's extensions go with a request when they are on (remote_reply::sampling), none when
    // off; the sampler order when it is not the default.
    void panelSettingsAreSentWhenOn() {
        wb::SamplingParams p;
        wb::remote::RemoteSampling r = remote_reply::sampling(p);
        QVERIFY(r.grammar.empty() && r.logit_bias.empty() && !r.dry_multiplier && !r.dry_sequence_breakers &&
                !r.xtc_probability && !r.top_n_sigma && !r.mirostat);
        QVERIFY(!r.samplers);  // the default order is not sent
        p.grammar = "root ::= \"a\"";
        p.logit_bias = {{5, -INFINITY}, {9, 1.5f}};
        p.dry_multiplier = 0.8f;
        p.dry_allowed_length = 4;
        p.xtc_probability = 0.5f;
        p.top_n_sigma = 2.0f;
        p.mirostat = 2;
        p.mirostat_tau = 3.0f;
        p.samplers = {"temperature", "top_k"};
        r = remote_reply::sampling(p);
        QCOMPARE(r.grammar, p.grammar);
        QVERIFY(r.logit_bias.size() == 2 && r.logit_bias[0].first == 5 && std::isinf(r.logit_bias[0].second) &&
                r.logit_bias[1] == std::make_pair(9, 1.5f));
        QVERIFY(r.dry_multiplier == 0.8f && r.dry_allowed_length == 4 && r.dry_base == p.dry_base &&
                r.dry_penalty_last_n == p.dry_penalty_last_n && r.dry_sequence_breakers == p.dry_sequence_breakers);
        QVERIFY(r.xtc_probability == 0.5f && r.xtc_threshold == p.xtc_threshold && r.top_n_sigma == 2.0f);
        QVERIFY(r.mirostat == 2 && r.mirostat_tau == 3.0f && r.mirostat_eta == p.mirostat_eta);
        p.dry_sequence_breakers.clear();  // a server refuses an empty list: it is not sent
        QVERIFY(!remote_reply::sampling(p).dry_sequence_breakers && remote_reply::sampling(p).dry_multiplier);
        QVERIFY(r.samplers == p.samplers);
    }

    // Nothing listening: a message that says so, the local model stays, no setting is kept.
    void nothingListeningIsAClearMessageAndKeepsNothing() {
        const QString dead = QStringLiteral("http://127.0.0.1:%1").arg(freePort());
        QVERIFY(!connectByDialog(dead));
        QTRY_VERIFY_WITH_TIMEOUT(openMessages(m_w).contains(QStringLiteral("connection refused")), 5000);
        QVERIFY2(openMessages(m_w).contains(QStringLiteral("Cannot connect to the server")), qPrintable(openMessages(m_w)));
        QVERIFY(!m_w->controller()->isRemote());
        QVERIFY(m_w->controller()->hasModel());
        QVERIFY(AppSettings::remoteEngine().url.isEmpty());
        // A server that does not list the model asked for is refused before anything changes, too.
        QVERIFY(!connectByDialog(url(), QStringLiteral("no-such-model")));
        QTRY_VERIFY_WITH_TIMEOUT(openMessages(m_w).contains(QStringLiteral("does not list the model no-such-model")), 5000);
        QVERIFY(!m_w->controller()->isRemote());
        QVERIFY(AppSettings::remoteEngine().url.isEmpty());
    }

    // A failed connection's fields come back as typed when the dialog opens again (held in memory
    // only: the saved setting is still none).
    void aFailedConnectKeepsWhatWasTyped() {
        const QString dead = QStringLiteral("http://127.0.0.1:%1/typed").arg(freePort());
        QVERIFY(!connectByDialog(dead, QStringLiteral("my-model")));
        closeMessages(m_w);
        m_w->remoteEngineUi()->connectAction()->trigger();
        RemoteConnectDialog* d = m_w->remoteEngineUi()->dialog();
        QVERIFY(d && d->isVisible());
        QCOMPARE(d->urlEdit()->text(), dead);
        QCOMPARE(d->keyEdit()->text(), QStringLiteral("test-key"));
        QCOMPARE(d->modelEdit()->text(), QStringLiteral("my-model"));
        d->close();
        QVERIFY(AppSettings::remoteEngine().url.isEmpty());
    }

    // Cancel while connecting to a server that accepts and never answers: the connection ends at
    // once (not after the probe's 15 s timeout), the local model stays, nothing is kept.
    void cancelWhileConnectingIsPrompt() {
        std::atomic<bool> release{false};
        wb_remote_test::FakeServer fake;
        const auto silent = [&](const httplib::Request&, httplib::Response& res) {
            for (int i = 0; i < 600 && !release.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
            res.status = 503;
        };
        fake.http.Get("/v1/models", silent);
        fake.http.Get("/props", silent);
        fake.start();
        QSignalSpy started(m_w->controller(), &ChatController::loadStarted);
        QSignalSpy canceled(m_w->controller(), &ChatController::loadCanceled);
        QSignalSpy failed(m_w->controller(), &ChatController::loadFailed);
        m_w->remoteEngineUi()->connectTo({QString::fromStdString(fake.url()), QString(), QString()});
        QVERIFY(started.wait(10000));
        QTest::qWait(300);  // the request is sent and waiting
        QVERIFY(canceled.isEmpty() && failed.isEmpty());
        QElapsedTimer t;
        t.start();
        m_w->controller()->cancelLoad();
        // Generous for a loaded CI; without the cancel flag the wait is the probe's 15 s.
        QVERIFY(canceled.wait(8000));
        QVERIFY2(t.elapsed() < 8000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(failed.isEmpty());
        QVERIFY(!m_w->controller()->isRemote());
        QVERIFY(m_w->controller()->hasModel());
        QVERIFY(AppSettings::remoteEngine().url.isEmpty());
        release.store(true);
    }

    // A reply cut by the local model's full context cannot go on with a remote engine: its tokens and
    // context are the local engine's. Connecting hides the notice's Shift / Trim offer, the controller
    // refuses the continuation, and the worker refuses a given start instead of sending the chat again
    // (the server's fresh answer used to be appended to the cut reply as if it went on).
    void aFullLocalContextIsNotContinuedRemotely() {
        ChatController* ctl = m_w->controller();
        QVERIFY(!ctl->isRemote());
        // Put back whatever check fails: later tests run with the usual context and policy.
        struct Restore {
            ChatController* ctl;
            int contextSize;
            wb::ContextPolicy policy;
            ~Restore() {
                ctl->setContextSize(contextSize);
                ctl->setContextPolicy(policy);
            }
        } restore{ctl, ctl->contextSize(), ctl->contextPolicy()};
        QSignalSpy loaded(ctl, &ChatController::modelLoaded);
        ctl->setContextSize(64);
        ctl->loadModel(QString::fromStdString(wb::default_model_path()));
        QVERIFY(loaded.wait(kTimeoutMs));
        ctl->setContextPolicy(wb::ContextPolicy::STOP);
        ctl->newChat();
        wb::SamplingParams p = greedy(400);
        p.ignore_eos = true;  // the reply runs into the end of the 64-token context
        useSampling(p);
        const GenerationSummary full = sendAndWait(QStringLiteral("Count from one to one hundred."));
        QCOMPARE(int(full.reason), int(wb::StopReason::CONTEXT_FULL));
        auto* notice = m_w->findChild<ContextFullNotice*>(QStringLiteral("contextFullNotice"));
        QVERIFY(notice && notice->isVisible());
        const ChatEntry cut = ctl->conversation().messages.last();
        QCOMPARE(cut.stopReason, QStringLiteral("context_full"));

        // "Shift / Trim and continue" while the connection is pending: the notice is gone at once and
        // the controller refuses (the request would reach the remote engine, which refuses a given
        // start); should one get there, the reply keeps its text and stop reason, not emptied.
        loaded.clear();
        ctl->connectRemote(url(), QStringLiteral("test-key"), QString());
        QVERIFY(!notice->isVisible());
        QVERIFY(!ctl->continueAfterFullContext(wb::ContextPolicy::TRIM));
        QVERIFY(loaded.wait(kTimeoutMs));
        QVERIFY(ctl->isRemote());
        QCOMPARE(ctl->conversation().messages.last().content, cut.content);
        QCOMPARE(ctl->conversation().messages.last().stopReason, QStringLiteral("context_full"));
        QVERIFY(!ctl->continueAfterFullContext(wb::ContextPolicy::TRIM));
        QVERIFY(!ctl->isGenerating());

        // The worker itself, given the cut reply's tokens as the start to go on from.
        QSignalSpy workerFinished(ctl->worker(), &InferenceWorker::generationFinished);
        QVector<int> forced;
        for (const TokenRecord& t : cut.tokens) forced.append(t.id);
        const ChatMessages messages{{"user", "Count from one to one hundred."}};
        QMetaObject::invokeMethod(ctl->worker(), "continueChat", Qt::QueuedConnection, Q_ARG(quint64, 987654),
                                  Q_ARG(ChatMessages, messages), Q_ARG(QVector<int>, forced),
                                  Q_ARG(int, int(wb::ContextPolicy::TRIM)));
        QVERIFY(workerFinished.wait(kTimeoutMs));
        const GenerationSummary refused = workerFinished.last().at(0).value<GenerationSummary>();
        QCOMPARE(int(refused.reason), int(wb::StopReason::ERROR));
        QVERIFY2(refused.error.contains(QStringLiteral("cannot continue")), qPrintable(refused.error));
    }

    // Connected: the setting is kept, the internals panels say they are not exposed.
    void connectKeepsTheSettingAndCoversTheInternals() {
        QVERIFY(connectByDialog(url()));
        QVERIFY(m_w->controller()->isRemote());
        const AppSettings::RemoteEngine kept = AppSettings::remoteEngine();
        QCOMPARE(kept.url, url());
        QCOMPARE(kept.apiKey, QStringLiteral("test-key"));
        // "No breakers" cannot be sent: the note under the field says so while it is empty.
        SamplerChainControls* chain = m_w->samplingPanel()->chainControls();
        const QString breakers = chain->breakersEdit()->text();
        chain->breakersEdit()->setText(QString());
        QVERIFY(!chain->breakersRemoteNote()->isHidden());
        chain->breakersEdit()->setText(QStringLiteral("\\n"));
        QVERIFY(chain->breakersRemoteNote()->isHidden());
        chain->breakersEdit()->setText(breakers);
        const QList<InternalsNotice*>& notices = m_w->remoteEngineUi()->notices();
        QCOMPARE(notices.size(), 7);  // attention, KV cache, lens, heads, ledger, prompt, timings
        for (InternalsNotice* n : notices) {
            QVERIFY(n->isShown());
            QVERIFY2(n->text().contains(QStringLiteral("does not expose")), qPrintable(n->text()));
            // It covers the whole panel: nothing of an empty or stale plot shows.
            QCOMPARE(n->label()->geometry(), n->label()->parentWidget()->rect());
        }
    }

    // The reply streams into the chat; its tokens carry the server's top logprobs as candidates.
    void replyStreamsWithTheServersLogprobs() {
        if (!m_w->controller()->isRemote()) QVERIFY(connectByDialog(url()));
        m_w->controller()->newChat();
        const QString prompt = QStringLiteral("Name three colors.");
        constexpr int kTokens = 12;
        useSampling(greedy(kTokens));
        QSignalSpy appended(m_w->controller(), &ChatController::tokenAppended);
        const GenerationSummary s = sendAndWait(prompt);
        QVERIFY2(s.reason != wb::StopReason::ERROR, qPrintable(s.error));
        QVERIFY(appended.size() >= 2);  // streamed: one signal per token, not one at the end
        const QJsonObject ref = reference(prompt, kTokens);
        const QString refText = ref["message"].toObject()["content"].toString();
        QVERIFY(!refText.isEmpty());
        const ChatEntry& reply = m_w->controller()->conversation().messages.last();
        QCOMPARE(reply.content, refText);
        const QJsonArray refTokens = ref["logprobs"].toObject()["content"].toArray();
        QCOMPARE(reply.tokens.size(), refTokens.size());
        for (int i = 0; i < refTokens.size(); ++i) {
            const QJsonArray top = refTokens[i].toObject()["top_logprobs"].toArray();
            const TokenRecord& t = reply.tokens[i];
            QCOMPARE(int(t.candidates.size()), top.size());
            QCOMPARE(top.size(), 20);
            for (int j = 0; j < top.size(); ++j) {
                const QJsonObject c = top[j].toObject();
                // The exact bytes (a token may hold part of a UTF-8 character, which "token" spells lossily).
                std::string bytes;
                for (const QJsonValue b : c["bytes"].toArray()) bytes += char(b.toInt());
                QCOMPARE(t.candidates[size_t(j)].piece, bytes);
                QVERIFY2(std::abs(t.candidates[size_t(j)].p_raw - std::exp(c["logprob"].toDouble())) < 2e-3,
                         qPrintable(QStringLiteral("token %1 candidate %2").arg(i).arg(j)));
            }
        }
        // The inspector shows them: 20 rows, the first one's p as the server gave it, no final p.
        m_w->inspectToken(int(m_w->controller()->conversation().messages.size()) - 1, 0);
        QTableWidget* table = m_w->tokenInspector()->candidateTable();
        QCOMPARE(table->rowCount(), 20);
        const double p0 = std::exp(refTokens[0].toObject()["top_logprobs"].toArray()[0].toObject()["logprob"].toDouble());
        QVERIFY(std::abs(table->item(0, 2)->text().toDouble() - p0) < 2e-3);
        QCOMPARE(table->item(0, 3)->text(), QStringLiteral("—"));
        QVERIFY(!m_w->tokenInspector()->forkButton()->isEnabled());
        // No sampler stages and no attention from a server: said, not left empty.
        QCOMPARE(m_w->tokenInspector()->traceTree()->topLevelItemCount(), 1);
        QVERIFY(m_w->tokenInspector()->traceTree()->topLevelItem(0)->text(0).contains(QStringLiteral("remote engine")));
    }

    // Stop ends a streaming reply at once: the client hangs up, what arrived stays.
    void stopEndsTheReplyPromptly() {
        if (!m_w->controller()->isRemote()) QVERIFY(connectByDialog(url()));
        m_w->controller()->newChat();
        useSampling(greedy(400));
        QSignalSpy appended(m_w->controller(), &ChatController::tokenAppended);
        QSignalSpy finished(m_w->controller(), &ChatController::generationFinished);
        m_w->chatPanel()->input()->setPlainText(QStringLiteral("Write a long story about a dragon who learns to cook."));
        m_w->chatPanel()->sendButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(appended.size() >= 3, kTimeoutMs);
        QVERIFY(finished.isEmpty());
        const double cancelled = metric("whitebox_generations_cancelled_total");
        QVERIFY(cancelled >= 0);
        QElapsedTimer t;
        t.start();
        m_w->controller()->stop();
        QVERIFY(finished.wait(kTimeoutMs));
        const qint64 ms = t.elapsed();
        // Generous for a loaded 2-core CI (400 tokens would take far longer); that the server was hung
        // up on, not left to run, is its own count below.
        QVERIFY2(ms < 10000, qPrintable(QStringLiteral("the reply ended %1 ms after Stop").arg(ms)));
        QTRY_COMPARE_WITH_TIMEOUT(metric("whitebox_generations_cancelled_total"), cancelled + 1, 10000);
        const GenerationSummary s = finished.last().at(0).value<GenerationSummary>();
        QCOMPARE(s.reason, wb::StopReason::STOPPED);
        const ChatEntry& reply = m_w->controller()->conversation().messages.last();
        QCOMPARE(reply.role, QStringLiteral("assistant"));
        QVERIFY(reply.tokens.size() >= 3);
        QVERIFY(reply.tokens.size() < 400);
    }

    // The server's greedy /v1/completions text for `prompt`, at most maxTokens.
    QString complete(const std::string& prompt, int maxTokens) {
        httplib::Client c("127.0.0.1", m_port);
        c.set_read_timeout(kTimeoutMs / 1000, 0);
        const QJsonObject body{{"prompt", QString::fromStdString(prompt)}, {"max_tokens", maxTokens}, {"temperature", 0.0},
                               {"stop", QJsonArray{"<|im_end|>"}}};
        const auto r = c.Post("/v1/completions", QJsonDocument(body).toJson().toStdString(), "application/json");
        if (!r || r->status != 200) return QStringLiteral("(failed)");
        return QJsonDocument::fromJson(QByteArray::fromStdString(r->body)).object()["choices"].toArray().at(0).toObject()["text"].toString();
    }

    // The chat prompt as the server's template (its /props) renders it, the BOS left to its tokenizer.
    std::string rendered(const QString& user) {
        httplib::Client c("127.0.0.1", m_port);
        const auto r = c.Get("/props");
        if (!r || r->status != 200) return {};
        const QJsonObject props = QJsonDocument::fromJson(QByteArray::fromStdString(r->body)).object();
        const wb::ChatTemplate t = wb::ChatTemplate::from_jinja(props["chat_template"].toString().toStdString(), {},
                                                                props["eos_token"].toString().toStdString());
        return t.render({{"user", user.toStdString()}}, true);
    }

    // Starts a greedy reply of kTokens (with `grammar`), changes the settings to `changed` after a few
    // tokens, and returns the finished reply's summary.
    GenerationSummary changeMidReply(const std::string& grammar, wb::SamplingParams changed) {
        constexpr int kTokens = 60;
        m_w->controller()->newChat();
        wb::SamplingParams p = greedy(kTokens);
        p.grammar = grammar;
        useSampling(p);
        QSignalSpy appended(m_w->controller(), &ChatController::tokenAppended);
        QSignalSpy finished(m_w->controller(), &ChatController::generationFinished);
        m_w->chatPanel()->input()->setPlainText(QStringLiteral("Write a short poem about the sea."));
        m_w->chatPanel()->sendButton()->click();
        if (!QTest::qWaitFor([&] { return appended.size() >= 4; }, kTimeoutMs) || !finished.isEmpty()) return {};
        changed.max_tokens = kTokens;
        useSampling(changed);
        if (!finished.wait(kTimeoutMs)) return {};
        return finished.last().at(0).value<GenerationSummary>();
    }

    // A grammar is checked by the server against generated tokens only, so a reply that has one, or a
    // change that sets one, is not continued mid-reply: the stream runs to its end, the change applies
    // from the next reply.
    void aGrammarIsNotContinuedMidReply() {
        if (!m_w->controller()->isRemote()) QVERIFY(connectByDialog(url()));
        const std::string grammar = "root ::= [a-z ,.\\n]+";
        const double cancelled = metric("whitebox_generations_cancelled_total");
        wb::SamplingParams changed = greedy(0);
        changed.top_k = 7;  // and the grammar taken away: this reply still had it
        GenerationSummary s = changeMidReply(grammar, changed);
        QVERIFY2(s.reason == wb::StopReason::EOS || s.reason == wb::StopReason::MAX_TOKENS, wb::stop_reason_name(s.reason));
        QVERIFY(!s.paramsChanged);
        changed = greedy(0);
        changed.grammar = grammar;  // the grammar itself set mid-reply
        s = changeMidReply({}, changed);
        QVERIFY2(s.reason == wb::StopReason::EOS || s.reason == wb::StopReason::MAX_TOKENS, wb::stop_reason_name(s.reason));
        QVERIFY(!s.paramsChanged);
        QCOMPARE(metric("whitebox_generations_cancelled_total"), cancelled);  // no stream was hung up
        useSampling(greedy(8));
    }

    // A sampling change mid-reply hangs up and the reply goes on from its text with the new settings,
    // through /v1/completions with the server's template: the reply is its text up to where the
    // change came plus the server's own greedy completion of that text.
    void samplingChangeContinuesTheReply() {
        if (!m_w->controller()->isRemote()) QVERIFY(connectByDialog(url()));
        const QString prompt = QStringLiteral("Write a short poem about the sea.");
        constexpr int kTokens = 60;
        // The template rendered here is the one the server renders a chat with: the same greedy text.
        const std::string chatPrompt = rendered(prompt);
        QVERIFY(!chatPrompt.empty());
        m_w->controller()->newChat();
        useSampling(greedy(kTokens));
        const GenerationSummary plain = sendAndWait(prompt);
        QVERIFY2(plain.reason != wb::StopReason::ERROR, qPrintable(plain.error));
        QVERIFY(!plain.paramsChanged);
        QCOMPARE(complete(chatPrompt, kTokens), m_w->controller()->conversation().messages.last().content);

        const double cancelled = metric("whitebox_generations_cancelled_total");
        QVERIFY(cancelled >= 0);
        m_w->controller()->newChat();
        useSampling(greedy(kTokens));
        QSignalSpy appended(m_w->controller(), &ChatController::tokenAppended);
        QSignalSpy finished(m_w->controller(), &ChatController::generationFinished);
        m_w->chatPanel()->input()->setPlainText(prompt);
        m_w->chatPanel()->sendButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(appended.size() >= 4, kTimeoutMs);
        QVERIFY(finished.isEmpty());
        const int tokensAtChange = int(m_w->controller()->conversation().messages.last().tokens.size());
        wb::SamplingParams changed = greedy(kTokens);
        changed.top_k = 7;
        useSampling(changed);
        QVERIFY(finished.wait(kTimeoutMs));
        const GenerationSummary s = finished.last().at(0).value<GenerationSummary>();
        QVERIFY2(s.reason == wb::StopReason::EOS || s.reason == wb::StopReason::MAX_TOKENS, wb::stop_reason_name(s.reason));
        QVERIFY(s.paramsChanged);
        QCOMPARE(s.params.top_k, 7);
        const ChatEntry& reply = m_w->controller()->conversation().messages.last();
        QVERIFY(reply.tokens.size() <= kTokens);
        // The stream ended within a few tokens of the change (the client looks every 50 ms): the
        // seam is one of those token boundaries, and from it on the reply is the server's completion.
        bool continued = false;
        QString prefix;
        // The window is wide: on a loaded machine more tokens may be on their way when the change lands.
        for (int k = 0; k < reply.tokens.size() && k <= tokensAtChange + 32 && !continued; ++k) {
            prefix += reply.tokens[k].piece;
            if (k + 1 < tokensAtChange || !reply.content.startsWith(prefix)) continue;
            continued = reply.content == prefix + complete(chatPrompt + prefix.toStdString(), kTokens - k - 1);
        }
        QVERIFY2(continued, qPrintable(reply.content));
        // The first stream was hung up (the server counts a client that left), not left to run.
        QTRY_COMPARE_WITH_TIMEOUT(metric("whitebox_generations_cancelled_total"), cancelled + 1, 10000);
    }

    // A 500 and a malformed stream: the message says what the server did, the user's message stays.
    void serverFailuresAreClearMessagesAndKeepTheMessage_data() {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("expected");
        QTest::newRow("500") << 500 << QStringLiteral(R"({"error":{"message":"the GPU caught fire","type":"server_error"}})")
                             << QStringLiteral("the GPU caught fire");
        QTest::newRow("malformed stream") << 200 << QStringLiteral("data: {\"choices\": [nonsense\n\n") << QStringLiteral("not");
    }
    void serverFailuresAreClearMessagesAndKeepTheMessage() {
        QFETCH(int, status);
        QFETCH(QString, body);
        QFETCH(QString, expected);
        wb_remote_test::FakeServer fake;
        fake.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"({"object":"list","data":[{"id":"fake","object":"model"}]})", "application/json");
        });
        const std::string content = body.toStdString();
        fake.http.Post("/v1/chat/completions", [status, content](const httplib::Request&, httplib::Response& res) {
            res.status = status;
            res.set_content(content, status == 200 ? "text/event-stream" : "application/json");
        });
        fake.start();
        QVERIFY(connectByDialog(QString::fromStdString(fake.url())));
        m_w->controller()->newChat();
        QSignalSpy errors(m_w->controller(), &ChatController::errorOccurred);
        const QString mine = QStringLiteral("My carefully written question, %1").arg(QTest::currentDataTag());
        const GenerationSummary s = sendAndWait(mine);
        QCOMPARE(s.reason, wb::StopReason::ERROR);
        QCOMPARE(errors.size(), 1);
        const QString message = errors.first().at(0).toString();
        QVERIFY2(message.contains(expected) && message.contains(QString::number(fake.port)), qPrintable(message));
        QTRY_VERIFY_WITH_TIMEOUT(openMessages(m_w).contains(expected), 5000);
        const auto& messages = m_w->controller()->conversation().messages;
        QVERIFY(!messages.isEmpty());
        QCOMPARE(messages.last().role, QStringLiteral("user"));
        QCOMPARE(messages.last().content, mine);
        QVERIFY(!m_w->controller()->isGenerating());
    }

    // While remote, a Backend / Context / Threads / KV choice waits for the next local load: no
    // reload of the server's URL as a model path, and nothing saved (a remote connection proves none
    // of them works), neither then nor when a remote connection loads.
    void loadOptionsWaitWhileRemote() {
        if (!m_w->controller()->isRemote()) QVERIFY(connectByDialog(url()));
        const int savedThreads = AppSettings::threads();
        QAction* other = nullptr;
        for (QAction* a : m_w->loadOptions()->threadsGroup()->actions())
            if (a->data().toInt() != m_w->controller()->threads()) other = a;
        QVERIFY(other);
        QSignalSpy started(m_w->controller(), &ChatController::loadStarted);
        other->trigger();
        QTest::qWait(300);
        QVERIFY(started.isEmpty());
        QVERIFY(m_w->controller()->isRemote());
        QCOMPARE(m_w->controller()->threads(), other->data().toInt());  // for the next local load
        QCOMPARE(AppSettings::threads(), savedThreads);
        QVERIFY(connectByDialog(url()));
        QCOMPARE(AppSettings::threads(), savedThreads);
        QCOMPARE(m_w->loadOptions()->working().threads, savedThreads);
    }

    // `whitebox --remote URL`: the saved key and model go with the saved server's URL; another URL
    // connects without them and is not saved (the saved connection stays whole).
    void commandLineRemoteKeepsTheSavedConnection() {
        wb_remote_test::FakeServer fake;
        fake.http.Get("/v1/models", [](const httplib::Request& req, httplib::Response& res) {
            if (req.get_header_value("Authorization") != "Bearer secret") {
                res.status = 401;
                res.set_content(R"({"error":{"message":"bad key"}})", "application/json");
                return;
            }
            res.set_content(R"({"object":"list","data":[{"id":"first"},{"id":"chosen"}]})", "application/json");
        });
        fake.start();
        const QString fakeUrl = QString::fromStdString(fake.url());
        AppSettings::setRemoteEngine({fakeUrl, QStringLiteral("secret"), QStringLiteral("chosen")});
        QSignalSpy loaded(m_w->controller(), &ChatController::modelLoaded);
        QSignalSpy failed(m_w->controller(), &ChatController::loadFailed);
        m_w->remoteEngineUi()->connectFromCommandLine(fakeUrl);
        QTRY_VERIFY_WITH_TIMEOUT(!loaded.isEmpty() || !failed.isEmpty(), 30000);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.isEmpty() ? QString() : failed.first().at(1).toString()));
        QCOMPARE(loaded.first().at(0).value<ModelSummary>().name, QStringLiteral("chosen"));
        // Another URL (the real server): it connects, and the saved one stays as it was.
        loaded.clear();
        m_w->remoteEngineUi()->connectFromCommandLine(url());
        QTRY_VERIFY_WITH_TIMEOUT(!loaded.isEmpty() || failed.size() > 0, 30000);
        QVERIFY(failed.isEmpty());
        QVERIFY(m_w->controller()->isRemote());
        const AppSettings::RemoteEngine kept = AppSettings::remoteEngine();
        QCOMPARE(kept.url, fakeUrl);
        QCOMPARE(kept.apiKey, QStringLiteral("secret"));
        QCOMPARE(kept.model, QStringLiteral("chosen"));
    }

    // Hostile or partial servers at connect: a /props that cannot be read (over 1 MiB) or whose
    // template throws on a real chat is no template (the connection works, continuation off); an
    // empty model list takes the model named; a long list is cut to ten names in the message.
    void oddServersAtConnect() {
        wb_remote_test::FakeServer fake;
        fake.http.Get("/big/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"({"object":"list","data":[]})", "application/json");
        });
        fake.http.Get("/big/props", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"({"chat_template":")" + std::string(2 * 1024 * 1024, 'x') + R"("})", "application/json");
        });
        fake.http.Get("/raise/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"({"object":"list","data":[{"id":"m"}]})", "application/json");
        });
        fake.http.Get("/raise/props", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"({"chat_template":"{% if messages|length > 1 %}{{ raise_exception('one message only') }}{% endif %}{{ messages[0].content }}","eos_token":"</s>"})",
                            "application/json");
        });
        fake.http.Get("/many/v1/models", [](const httplib::Request&, httplib::Response& res) {
            std::string data;
            for (int i = 0; i < 50; ++i) {
                if (i > 0) data += ',';
                data += R"({"id":"m-)";
                data += std::to_string(i);
                data += R"("})";
            }
            res.set_content(R"({"object":"list","data":[)" + data + "]}", "application/json");
        });
        fake.start();
        for (const char* path : {"/big", "/raise"}) {
            QSignalSpy loaded(m_w->controller(), &ChatController::modelLoaded);
            QSignalSpy failed(m_w->controller(), &ChatController::loadFailed);
            m_w->remoteEngineUi()->connectTo({QString::fromStdString(fake.url(path)), QString(), QStringLiteral("named")}, false);
            QTRY_VERIFY_WITH_TIMEOUT(!loaded.isEmpty() || !failed.isEmpty(), 30000);
            if (QByteArray(path) == "/raise") {
                // This server lists "m" only: the named model is refused, so ask for that one.
                QVERIFY(!failed.isEmpty());
                closeMessages(m_w);
                loaded.clear();
                failed.clear();
                m_w->remoteEngineUi()->connectTo({QString::fromStdString(fake.url(path)), QString(), QStringLiteral("m")}, false);
                QTRY_VERIFY_WITH_TIMEOUT(!loaded.isEmpty() || !failed.isEmpty(), 30000);
            }
            QVERIFY2(failed.isEmpty(), qPrintable(failed.isEmpty() ? QString() : failed.first().at(1).toString()));
            const ModelSummary s = loaded.first().at(0).value<ModelSummary>();
            QVERIFY2(s.chatTemplate.contains(QStringLiteral("not exposed")), qPrintable(path + (": " + s.chatTemplate)));
        }
        QCOMPARE(m_w->controller()->model().name, QStringLiteral("m"));
        QSignalSpy failed(m_w->controller(), &ChatController::loadFailed);
        m_w->remoteEngineUi()->connectTo({QString::fromStdString(fake.url("/many")), QString(), QStringLiteral("absent")}, false);
        QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), 30000);
        const QString message = failed.first().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("m-9, and 40 more")) && !message.contains(QStringLiteral("m-10")), qPrintable(message));
        closeMessages(m_w);
    }

    // A server's error text reaches the message box bounded (about 2 KB of a 20 KB message) and as
    // plain text (its markup is shown, never rendered).
    void serverTextIsBoundedAndPlain() {
        wb_remote_test::FakeServer fake;
        fake.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.status = 500;
            res.set_content(R"({"error":{"message":"<b>loud</b> )" + std::string(20000, 'y') + R"("}})", "application/json");
        });
        fake.start();
        QSignalSpy failed(m_w->controller(), &ChatController::loadFailed);
        m_w->remoteEngineUi()->connectTo({QString::fromStdString(fake.url()), QString(), QString()}, false);
        QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), 30000);
        const QString message = failed.first().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("<b>loud</b>")) && message.size() <= 2100, qPrintable(QString::number(message.size())));
        QMessageBox* shown = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((shown = [this]() -> QMessageBox* {
                                     for (QMessageBox* b : m_w->findChildren<QMessageBox*>())
                                         if (b->isVisible() && b->text().contains(QStringLiteral("<b>loud</b>"))) return b;
                                     return nullptr;
                                 }()) != nullptr,
                                 5000);
        QCOMPARE(shown->textFormat(), Qt::PlainText);
        closeMessages(m_w);
    }

    // Loading a local model goes back: the notices go, replies come from the local engine again.
    void loadingALocalModelGoesBack() {
        if (!m_w->controller()->isRemote()) QVERIFY(connectByDialog(url()));
        SamplerChainControls* chain = m_w->samplingPanel()->chainControls();
        const QString breakers = chain->breakersEdit()->text();
        chain->breakersEdit()->setText(QString());
        QVERIFY(!chain->breakersRemoteNote()->isHidden());
        QSignalSpy loaded(m_w->controller(), &ChatController::modelLoaded);
        m_w->controller()->loadModel(QString::fromStdString(wb::default_model_path()));
        QVERIFY(loaded.wait(kTimeoutMs));
        QVERIFY(!m_w->controller()->isRemote());
        for (InternalsNotice* n : m_w->remoteEngineUi()->notices()) QVERIFY(!n->isShown());
        QVERIFY(chain->breakersRemoteNote()->isHidden());  // the local engine takes "no breakers"
        chain->breakersEdit()->setText(breakers);
        m_w->controller()->newChat();
        useSampling(greedy(4));
        const GenerationSummary s = sendAndWait(QStringLiteral("Hi"));
        QVERIFY2(s.reason != wb::StopReason::ERROR, qPrintable(s.error));
        const ChatEntry& reply = m_w->controller()->conversation().messages.last();
        QVERIFY(!reply.tokens.isEmpty());
        QVERIFY(reply.tokens.first().id >= 0);  // a local token has its id
        QVERIFY(s.rounds > 0);                  // the local engine ran it
    }

    // A local load queued before a connection ends first: it says nothing of the connection, which
    // stays pending and is kept (saved) once the server answers (a local load used to forget it).
    void aLocalLoadBeforeAConnectionLeavesItPending() {
        ChatController* ctl = m_w->controller();
        AppSettings::setRemoteEngine({});
        QSignalSpy loaded(ctl, &ChatController::modelLoaded);
        ctl->loadModel(QString::fromStdString(wb::default_model_path()));
        const AppSettings::RemoteEngine engine{url(), QStringLiteral("queued-key"), QString()};
        m_w->remoteEngineUi()->connectTo(engine);
        QTRY_VERIFY_WITH_TIMEOUT(loaded.size() == 2, kTimeoutMs);
        QVERIFY(!loaded.at(0).at(0).value<ModelSummary>().isRemote());
        QVERIFY(ctl->isRemote());
        QCOMPARE(AppSettings::remoteEngine().url, url());
        QCOMPARE(AppSettings::remoteEngine().apiKey, QStringLiteral("queued-key"));
    }

    // A logit bias by text was encoded by the local model's tokenizer: with a remote engine those ids
    // would name other tokens of another vocabulary, so none of the field is sent, and the field says
    // why (its text is kept for the next local model).
    void aTextLogitBiasIsNotSentToTheServer() {
        ChatController* ctl = m_w->controller();
        if (ctl->isRemote()) {
            QSignalSpy loaded(ctl, &ChatController::modelLoaded);
            ctl->loadModel(QString::fromStdString(wb::default_model_path()));
            QVERIFY(loaded.wait(kTimeoutMs));
        }
        SamplerChainControls* chain = m_w->samplingPanel()->chainControls();
        const QString typed = QStringLiteral("'Paris'=-inf, 13=+2");
        chain->logitBiasEdit()->setText(typed);
        QVERIFY(chain->logitBiasError()->isHidden());
        QVERIFY(ctl->samplingParams().logit_bias.size() >= 2);
        QVERIFY(connectByDialog(url()));
        QVERIFY(ctl->samplingParams().logit_bias.empty());
        QVERIFY(remote_reply::sampling(ctl->samplingParams()).logit_bias.empty());
        QVERIFY(!chain->logitBiasError()->isHidden());
        QVERIFY2(chain->logitBiasError()->text().contains(QStringLiteral("needs a loaded model")),
                 qPrintable(chain->logitBiasError()->text()));
        QCOMPARE(chain->logitBiasEdit()->text(), typed);
        chain->logitBiasEdit()->setText(QString());
        QVERIFY(chain->logitBiasError()->isHidden());
    }
};

QTEST_MAIN(TestRemoteEngine)
#include "test_remote_engine.moc"
