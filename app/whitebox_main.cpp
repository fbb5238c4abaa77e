// whitebox: the desktop app. Argument handling and wiring only; everything else lives in ui/.
#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>
#include <cstring>

#include "chat_controller.h"
#include "main_window.h"
#include "remote_engine_ui.h"
#include "screenshot_runner.h"
#include "theme.h"
#include "wb_version.h"

int main(int argc, char** argv) {
    // Before QApplication: --version must work without a display.
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--version") == 0) {
            std::printf("whitebox %s (commit %s)\n", WB_VERSION, WB_GIT_COMMIT);
            return 0;
        }
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("WhiteBox"));
    QApplication::setApplicationName(QStringLiteral("WhiteBox"));
    QApplication::setApplicationVersion(QStringLiteral(WB_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Chat with a local LLM and see inside it."));
    parser.addHelpOption();
    const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")}, QStringLiteral("GGUF model to open."),
                                   QStringLiteral("path"));
    const QCommandLineOption shots(QStringLiteral("screenshot"),
                                   QStringLiteral("Send --prompt, save screenshots of the window and panels in DIR, quit."),
                                   QStringLiteral("dir"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("Prompt for --screenshot."), QStringLiteral("text"),
                                    QStringLiteral("Write a Python function that reverses a string, with a short explanation."));
    const QCommandLineOption theme(QStringLiteral("theme"),
                                   QStringLiteral("Colours for this run: system, light or dark (View > Theme keeps a choice)."),
                                   QStringLiteral("name"));
    const QCommandLineOption remote(QStringLiteral("remote"),
                                    QStringLiteral("Chat with the OpenAI-compatible server at URL instead of a local model "
                                                   "(as File > Connect to server…; the saved key and model are used when URL is the saved "
                                                   "server's, and another URL is not saved)."),
                                    QStringLiteral("url"));
    parser.addOption(QCommandLineOption(QStringLiteral("version"), QStringLiteral("Print the version and exit.")));
    parser.addOptions({model, shots, prompt, theme, remote});
    parser.process(app);

    MainWindow window;
    if (parser.isSet(theme)) window.setTheme(Theme::modeFromName(parser.value(theme)), false);
    window.show();
    if (parser.isSet(shots))
        new ScreenshotRunner(&window, parser.value(shots), parser.value(prompt), parser.isSet(remote), &window);
    if (parser.isSet(remote))
        window.remoteEngineUi()->connectFromCommandLine(parser.value(remote));
    else if (parser.isSet(model))
        window.controller()->loadModel(parser.value(model));
    else
        window.start();
    return app.exec();
}
