package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The pages of docs/ that users are sent to exist, and every relative link of docs/, deploy/README.md, the
 * README and CHANGELOG.md leads to a file that exists (pages move: the runbooks did).
 */
class DocsTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final Pattern LINK = Pattern.compile("\\]\\(([^)#\\s]+)(#[^)\\s]*)?\\)");

  @Test
  void theOperatorPagesExist() {
    for (String page : List.of("install.md", "upgrade.md", "operate.md", "troubleshoot.md", "compatibility.md",
        "deployment-scenarios.md")) {
      assertThat(ROOT.resolve("docs").resolve(page)).as("docs/%s", page).isRegularFile();
    }
  }

  @Test
  void everyRelativeLinkLeadsToAFile() throws IOException {
    List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("deploy/README.md"),
        ROOT.resolve("CHANGELOG.md")));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).forEach(pages::add);
    }
    List<String> broken = new ArrayList<>();
    int links = 0;
    for (Path page : pages) {
      Matcher m = LINK.matcher(Files.readString(page));
      while (m.find()) {
        String target = m.group(1);
        if (target.contains("://")) {
          continue;
        }
        links++;
        if (!Files.exists(page.getParent().resolve(target))) {
          broken.add(ROOT.relativize(page) + " -> " + target);
        }
      }
    }
    assertThat(links).as("relative links checked").isGreaterThan(10);
    assertThat(broken).as("links to files that do not exist").isEmpty();
  }
}
