package io.mooring.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The BOM has no parent (so Mooring's build pins never reach an application), which means nothing in Maven keeps it
 * in step with the build: this test does. Every library module — a module that publishes sources and javadoc — is
 * in the BOM at the project's version, and nothing else is.
 */
class BomTest {
    private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).toAbsolutePath().getParent();

    @Test
    void theBomListsEveryLibraryModuleAtTheProjectVersion() throws Exception {
        Element parent = read(ROOT.resolve("pom.xml"));
        String version = child(parent, "version").getTextContent();
        Element bom = read(ROOT.resolve("bom/pom.xml"));
        assertEquals(version, child(bom, "version").getTextContent(), "bom/pom.xml's version");

        var libraries = new TreeSet<String>();
        for (Element module : children(child(parent, "modules"), "module")) {
            Path pom = ROOT.resolve(module.getTextContent()).resolve("pom.xml");
            if (Files.readString(pom).contains("<artifactId>maven-javadoc-plugin</artifactId>")) {
                libraries.add(child(read(pom), "artifactId").getTextContent() + ":" + version);
            }
        }
        var managed = new TreeSet<String>();
        Element dependencies = child(child(bom, "dependencyManagement"), "dependencies");
        for (Element dependency : children(dependencies, "dependency")) {
            String artifact = child(dependency, "artifactId").getTextContent();
            String pinned = child(dependency, "version").getTextContent();
            if (child(dependency, "groupId").getTextContent().equals("io.mooring")) {
                managed.add(artifact + ":" + pinned);
            } else {
                // A third-party library the modules require: the BOM pins the version the parent builds with.
                String property = artifact + ".version";
                assertEquals(child(child(parent, "properties"), property).getTextContent(), pinned,
                        "the BOM's " + artifact + " against the parent's " + property);
            }
        }
        assertEquals(libraries, managed, "the BOM's managed dependencies");
    }

    private static Element read(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
    }

    private static Element child(Element parent, String name) {
        List<Element> found = children(parent, name);
        assertEquals(1, found.size(), () -> "<" + name + "> under <" + parent.getTagName() + ">");
        return found.getFirst();
    }

    private static List<Element> children(Element parent, String name) {
        var found = new ArrayList<Element>();
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) found.add(e);
        }
        return found;
    }
}
